"""Tests of the bundled handlers (``lsm_handlers``), called exactly as the engine calls them.

``run`` builds the resource the handler gets the way the agent does (``materialize`` from the
stored id, attributes and requires), makes a ``HandlerContext`` and calls ``deploy``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from lsm.deploy.handler import Handler, HandlerContext, call
from lsm.deploy.jail import Jail
from lsm.deploy.materialize import materialize
from lsm.model.resource import Resource


def jail_for(resource: Resource, state_dir: Path) -> Jail:
    """The state directory, and the origin of the resource's ``url`` when it has one."""
    url = getattr(resource, "url", None)
    return Jail.of([state_dir], urls=[str(httpx.URL(url).copy_with(path="/", query=None))] if url else [])


def run(
    handler: Handler[Any], resource: Resource, state_dir: Path, *, dry_run: bool = False
) -> HandlerContext:
    """One deploy of ``resource`` by ``handler``; returns the context (action, changes, logs).

    The jail is the agent's default (the state directory), plus, for a resource with a ``url``,
    that URL's origin: as an operator would allow the test server (``handler_url_roots``).
    """
    data = resource.to_data()
    ctx = HandlerContext(data.id, state_dir=state_dir, dry_run=dry_run, jail=jail_for(resource, state_dir))
    target = materialize(handler, data.id, data.attributes, data.requires)
    call(handler.pre, ctx, target)
    try:
        handler.deploy(ctx, target, dry_run=dry_run)
    finally:
        call(handler.post, ctx, target)
    return ctx
