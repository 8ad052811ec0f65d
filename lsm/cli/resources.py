"""``lsm resources [show ID]``: the resources of the newest desired state and where their
deploy stands; ``status_cell`` colours a resource status alike in every table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out

if TYPE_CHECKING:
    from lsm.client import Client

app = typer.Typer(help="Resources of the newest desired state and their deploy.")

#: how a resource status is shown in tables
_STATUS_STYLE = {
    "deployed": "green",
    "failed": "red",
    "skipped": "yellow",
    "pending": "cyan",
    "deploying": "blue",
    "noop_pending": "magenta",
}


def status_cell(value: Any) -> str:
    """A resource status, coloured alike in every table."""
    text = escape(str(value or ""))
    style = _STATUS_STYLE.get(str(value))
    return f"[{style}]{text}[/]" if style else text


@app.callback(invoke_without_command=True)
def resources_list(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's resources.")] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status", help="Only this status: pending, deploying, deployed, failed, skipped, noop_pending."
        ),
    ] = None,
    resource_type: Annotated[
        str | None, typer.Option("--type", help="Only this type, e.g. std::File.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many (1..1000).")] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many (paging, in id order).")] = 0,
) -> None:
    """The resources of the newest desired state and where their deploy stands (``show ID``: one)."""
    if ctx.invoked_subcommand is not None:
        return

    def show(resources: list[dict[str, Any]]) -> None:
        table = render.table(
            "resources",
            ("id", "agent", "status", "set", "version", "deployed", "tries", "last action", "at", "error"),
        )
        for r in resources:
            table.add_row(
                escape(r["id"]),
                escape(r["agent"]),
                status_cell(r["status"]),
                escape(render.set_label(r.get("set"), r.get("set_name"))),
                render.cell(r.get("version")),
                render.cell(r.get("last_deployed_version")),
                render.cell(r.get("attempts") or None),
                render.cell(r.get("last_action")),
                render.cell(r.get("last_action_at")),
                render.first_line(r.get("last_error")),
            )
        out.print(table)
        if not resources:
            out.note("[dim](none)[/]")

    call(
        ctx,
        lambda c: c.resources(
            agent=agent, status=status, resource_type=resource_type, limit=limit, offset=offset
        ),
        show,
    )


@app.command("show")
def resources_show(
    ctx: typer.Context,
    resource_id: Annotated[str, typer.Argument(help="The resource id, e.g. 'std::File[h1,path=/tmp/x]'.")],
    actions: Annotated[
        int, typer.Option("--actions", help="Show this many of its actions (newest first).")
    ] = 10,
) -> None:
    """One resource: its deploy state, desired attributes and latest actions."""

    def request(client: Client) -> dict[str, Any]:
        resource = client.resource(resource_id)
        return {"resource": resource, "actions": client.resource_actions(resource_id, limit=actions)}

    def show(data: dict[str, Any]) -> None:
        resource = dict(data["resource"])
        attributes = resource.pop("attributes", None) or {}
        resource["set"] = render.set_label(resource.get("set"), resource.pop("set_name", None))
        render.print_key_values(out, resource, title="resource")
        if attributes:
            render.print_key_values(out, attributes, title="desired attributes")
        table = render.table(
            "actions (newest first)", ("id", "started", "action", "status", "ms", "changes", "message")
        )
        for a in data["actions"]:
            messages = a.get("messages") or []
            action = escape(str(a["action"])) + (" (dry run)" if a.get("dry_run") else "")
            table.add_row(
                str(a["id"]),
                render.cell(a.get("started_at")),
                action,
                status_cell(a.get("status")),
                f"{float(a.get('duration_ms') or 0):.1f}",
                escape(", ".join(a.get("changes") or {})),
                render.first_line(messages[-1].get("message") if messages else None),
            )
        out.print(table)

    call(ctx, request, show)
