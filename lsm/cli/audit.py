"""``lsm audit``: who did what, when (admins), newest first."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out


def audit_list(
    ctx: typer.Context,
    actor: Annotated[str | None, typer.Option("--actor", help="Only this actor.")] = None,
    action: Annotated[
        str | None, typer.Option("--action", help="Only this action (and sub-actions).")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only from this time on (ISO 8601).")] = None,
    of: Annotated[str | None, typer.Option("--of", help="Only this environment (name or id).")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many lines.")] = 100,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many lines.")] = 0,
) -> None:
    """Who did what, when (admins): newest first."""

    def show(lines: list[dict[str, Any]]) -> None:
        table = render.table("audit", ("time", "actor", "action", "target", "environment", "request"))
        for line in lines:
            table.add_row(
                render.cell(line.get("time")),
                render.cell(line.get("actor")),
                render.cell(line.get("action")),
                render.cell(line.get("target")),
                render.cell(line.get("environment")),
                render.cell(line.get("request_id")),
            )
        out.print(table)

    call(
        ctx,
        lambda c: c.audit(
            actor=actor, action=action, since=since, environment=of, limit=limit, offset=offset
        ),
        show,
        environment=False,
    )
