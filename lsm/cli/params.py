"""Arguments and options that several command groups declare alike (instances, expert mode).

The options every client command shares (``--url``, ``--environment``, ``--json``,
``--token``) are not here: they belong to the root (``lsm.cli.options``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

Entity = Annotated[str, typer.Argument(help="Entity (API name).")]
Ref = Annotated[str, typer.Argument(help="Instance id, or <identity_attr>=<value>.")]
CurrentVersion = Annotated[
    int, typer.Option("--current-version", "-v", help="The instance version this change is based on.")
]
Attr = Annotated[
    list[str] | None,
    typer.Option(
        "--attr", "-a", help="key=value, repeatable; the value is JSON when it parses, else a string."
    ),
]
AttributesJson = Annotated[str | None, typer.Option("--attributes", help="All attributes as a JSON object.")]


def parse_attributes(attrs: list[str] | None, attributes: str | None) -> dict[str, Any]:
    """``--attributes '{json}'`` first, then each ``--attr key=value`` over it."""
    result: dict[str, Any] = {}
    if attributes:
        try:
            parsed = json.loads(attributes)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--attributes") from None
        if not isinstance(parsed, dict):
            raise typer.BadParameter("must be a JSON object", param_hint="--attributes")
        result.update(parsed)
    for item in attrs or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected key=value, got {item!r}", param_hint="--attr")
        try:
            result[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            result[key.strip()] = raw
    return result


def parse_value(value: str) -> Any:
    """A value given on the command line: JSON when it parses (``5``, ``true``), else the string."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


Wait = Annotated[
    bool,
    typer.Option(
        "--wait", help="Follow until it reached its target state: exit 0, 1 when it failed, 3 on time-out."
    ),
]
Timeout = Annotated[
    float, typer.Option("--timeout", min=0.0, help="With --wait: give up (exit 3) after this many seconds.")
]
