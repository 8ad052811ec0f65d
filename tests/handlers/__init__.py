"""Tests of the bundled handlers (``lsm_handlers``), called exactly as the engine calls them.

``run`` builds the resource the handler gets the way the agent does (``materialize`` from the
stored id, attributes and requires), makes a ``HandlerContext`` and calls ``deploy``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsm.deploy.handler import Handler, HandlerContext, call
from lsm.deploy.materialize import materialize
from lsm.model.resource import Resource


def run(
    handler: Handler[Any], resource: Resource, state_dir: Path, *, dry_run: bool = False
) -> HandlerContext:
    """One deploy of ``resource`` by ``handler``; returns the context (action, changes, logs)."""
    data = resource.to_data()
    ctx = HandlerContext(data.id, state_dir=state_dir, dry_run=dry_run)
    target = materialize(handler, data.id, data.attributes, data.requires)
    call(handler.pre, ctx, target)
    try:
        handler.deploy(ctx, target, dry_run=dry_run)
    finally:
        call(handler.post, ctx, target)
    return ctx
