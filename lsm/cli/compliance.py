"""``lsm compliance``: is the target still as desired? Ask the agents for a compliance report
over a selection, wait for it, and print what drifted, what is missing and what could not be
read. Nothing is changed on the targets (``lsm deploy --repair`` does that).

The selection options (``--agent``, ``--type``, ``--set``, ``--instance``) are the ones of
``lsm deploy``; each is repeatable, and a resource must match every option given.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import connected, print_json
from lsm.cli.console import err, out
from lsm.cli.options import shared

if TYPE_CHECKING:
    from lsm.client import Client

#: seconds between looks at a report while ``lsm compliance`` waits for it
REPORT_POLL = 0.5
#: rows fetched per page of a finished report
PAGE = 1000

#: the selection options, shared with ``lsm deploy``
AgentOpt = Annotated[list[str] | None, typer.Option("--agent", help="Only this agent (repeatable).")]
TypeOpt = Annotated[
    list[str] | None, typer.Option("--type", help="Only resources of this type, e.g. std::File (repeatable).")
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Only this resource set: a root instance id, or 'shared' (repeatable)."),
]
InstanceOpt = Annotated[
    list[str] | None,
    typer.Option("--instance", help="Only the resources this instance (id) produced (repeatable)."),
]

_STYLE = {"in_sync": "green", "drifted": "yellow", "missing": "red", "error": "red"}


class Scope(TypedDict):
    """A selection as the client's keyword arguments."""

    agents: list[str] | None
    types: list[str] | None
    sets: list[str] | None
    instances: list[str] | None


def selection(
    agent: list[str] | None, type_: list[str] | None, set_: list[str] | None, instance: list[str] | None
) -> Scope:
    """The options as the client's keyword arguments (an option not given: None)."""
    return {
        "agents": list(agent) if agent else None,
        "types": list(type_) if type_ else None,
        "sets": list(set_) if set_ else None,
        "instances": list(instance) if instance else None,
    }


def _wait(client: Client, report_id: str, timeout: float) -> dict[str, Any]:
    """Poll the report (counts only) until it is done or failed; exit 1 past ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        report = client.compliance_report(report_id, limit=0)
        if report["status"] in ("done", "failed"):
            return report
        if time.monotonic() >= deadline:
            err.print(
                f"[red]error:[/] compliance report {report_id} not finished within {timeout:g} s "
                f"({report.get('checked', 0)} of {report.get('total', 0)} checked)"
            )
            raise typer.Exit(1)
        time.sleep(min(REPORT_POLL, max(0.0, deadline - time.monotonic())))


def _rows(client: Client, report_id: str, outcome: str | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    while True:
        page = client.compliance_report(report_id, outcome=outcome, limit=PAGE, offset=len(rows))
        rows.extend(page.get("resources") or [])
        if len(page.get("resources") or []) < PAGE:
            return rows


def _show(report: dict[str, Any], rows: list[dict[str, Any]], *, all_rows: bool) -> None:
    shown = rows if all_rows else [r for r in rows if r["outcome"] != "in_sync"]
    table = render.table(
        f"compliance report {report['id']} (version {report.get('version')}, nothing changed)",
        ("id", "outcome", "differences", "error"),
    )
    for row in shown:
        outcome = str(row["outcome"])
        changes = "\n".join(
            f"{escape(key)}: {render.cell(c.get('current'))} → {render.cell(c.get('desired'))}"
            for key, c in (row.get("changes") or {}).items()
        )
        table.add_row(
            escape(row["id"]),
            f"[{_STYLE.get(outcome, '')}]{escape(outcome)}[/]",
            changes,
            render.first_line(row.get("error")),
        )
    if shown:
        out.print(table)
    counts = report.get("counts") or {}
    line = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no resources"
    out.print(f"{report.get('checked', 0)} of {report.get('total', 0)} resource(s) checked: {escape(line)}")
    if report.get("error"):
        out.print(f"[red]failed:[/] {escape(str(report['error']))}")


def compliance(
    ctx: typer.Context,
    agent: AgentOpt = None,
    type_: TypeOpt = None,
    set_: SetOpt = None,
    instance: InstanceOpt = None,
    all_rows: Annotated[bool, typer.Option("--all", help="List in-sync resources too.")] = False,
    timeout: Annotated[float, typer.Option(help="How long to wait for the report (seconds).")] = 600.0,
) -> None:
    """Check the selected resources' targets against the newest desired state, changing nothing.

    Exit code 1 when a resource drifted, is missing or could not be read, or the report failed
    or did not finish in time; 0 when everything is in sync.
    """
    if timeout <= 0:
        raise typer.BadParameter("must be positive", param_hint="--timeout")
    with connected(ctx) as client:
        asked = client.compliance(**selection(agent, type_, set_, instance))
        report = _wait(client, asked["id"], timeout)
        if all_rows or shared(ctx).json:
            rows = _rows(client, asked["id"], None)
        else:  # only what is not in sync: a report over 100,000 resources lists a few
            rows = sorted(
                (
                    row
                    for outcome in ("drifted", "missing", "error")
                    for row in _rows(client, asked["id"], outcome)
                ),
                key=lambda row: str(row["id"]),
            )
    if shared(ctx).json:
        print_json({**report, "resources": rows})
    else:
        _show(report, rows, all_rows=all_rows)
    counts = report.get("counts") or {}
    if report["status"] == "failed" or any(counts.get(k) for k in ("drifted", "missing", "error")):
        raise typer.Exit(1)


__all__ = ["Scope", "compliance", "selection"]
