"""One request to the server, the way every client command makes it.

A command says what to ask (``request``, given a ``Client``) and how to show the answer
(``show``); ``call`` connects with the shared options of the invocation (``lsm.cli.options``),
reports failures the one way (``lsm.cli.errors``) and prints the raw answer instead with
``--json`` or ``-o json|yaml``. ``connected`` is for the few commands that hold the connection themselves (to
follow a log, a compile or a deploy).

``lsm.client`` is imported when a command runs, never at import: ``lsm --help`` needs no client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from lsm.cli.errors import errors_reported
from lsm.cli.options import current, shared

if TYPE_CHECKING:
    from lsm.client import Client


def print_json(data: Any) -> None:
    """``--json``/``-o json``: the answer as the API gave it, indented; ``-o yaml``: the same
    records as YAML (the JSON's values, so that both parse to the same data)."""
    text = json.dumps(data, indent=2, default=str)
    if current().output == "yaml":
        import yaml

        typer.echo(yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True), nl=False)
    else:
        typer.echo(text)


@contextmanager
def connected(ctx: typer.Context, *, environment: bool = True) -> Iterator[Client]:
    """A client for the invocation's server, environment (unless ``environment`` is false: a
    command over every environment) and token; its failures reported as ``error: ...``."""
    from lsm.client import Client

    options = shared(ctx)
    scope = options.environment if environment else None
    with errors_reported(options.url), Client(options.url, scope, token=options.token) as client:
        yield client


def call(
    ctx: typer.Context,
    request: Callable[[Client], Any],
    show: Callable[[Any], None],
    *,
    environment: bool = True,
    raw: bool | None = None,
) -> Any:
    """Run one request and print its answer (the raw answer with ``--json``/``-o``, else ``show``).

    ``raw=False`` leaves the answer to ``show`` even with ``--json`` (a command that writes the
    JSON itself); the answer is returned either way.
    """
    with connected(ctx, environment=environment) as client:
        result = request(client)
    if shared(ctx).json if raw is None else raw:
        print_json(result)
    else:
        show(result)
    return result
