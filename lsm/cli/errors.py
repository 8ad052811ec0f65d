"""How the ``lsm`` command reports a failure: ``error: <message>`` in red on stderr with the
error's details, exit code 1, never a traceback for an ``LsmError`` or an unreachable server.

Bad command-line input is typer's usage error instead (exit code 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.console import err
from lsm.errors import LsmError


def fail(exc: LsmError) -> typer.Exit:
    """Print an engine error (message, then details) and give the exit to raise."""
    err.print(f"[red]error:[/] {escape(exc.message)}")
    for key, value in exc.details.items():
        if key == "items" and isinstance(value, list):  # a bulk request or an order: every refused item
            for item in value:
                if isinstance(item, dict):
                    err.print(f"  - {escape(_refused(item))}")
                    for sub in item.get("errors") or []:
                        if isinstance(sub, dict) and "path" in sub:
                            err.print(f"    {escape(str(sub['path']))}: {escape(str(sub.get('reason', '')))}")
        elif key == "errors" and isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and "path" in item:
                    err.print(f"  - {escape(str(item['path']))}: {escape(str(item.get('reason', '')))}")
                else:
                    err.print(f"  - {escape(render.compact(item))}")
        else:
            err.print(f"  {escape(key)}: {escape(render.compact(value))}")
    return typer.Exit(1)


@contextmanager
def errors_reported(url: str | None = None) -> Iterator[None]:
    """Turn ``LsmError`` and transport failures into ``error: ...`` and exit code 1."""
    import httpx

    try:
        yield
    except LsmError as exc:
        raise fail(exc) from None
    except httpx.TransportError as exc:
        where = f" at {url}" if url else ""
        reason = str(exc) or type(exc).__name__
        err.print(f"[red]error:[/] cannot reach the lsm server{escape(where)}: {escape(reason)}")
        raise typer.Exit(1) from None


def _refused(item: dict[str, Any]) -> str:
    """One refused item of a bulk request (``op[index] (id)``) or of an order (``item index
    (ref) [rule]``, its message naming the item already when the order's check refused it)."""
    message = str(item.get("message", ""))
    if "op" in item:
        named = f" ({item['id']})" if item.get("id") else ""
        return f"{item.get('op')}[{item.get('index')}]{named}: {message}"
    rule = item.get("rule") or item.get("error")
    if message.startswith("item "):
        return f"[{rule}] {message}"
    named = f" ({item['ref']})" if item.get("ref") else ""
    return f"[{rule}] item {item.get('index')}{named}: {message}"
