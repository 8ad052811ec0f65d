"""``lsm discovered`` and ``lsm adopt``: what the discovery resources found, and adopting it as
instances."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out
from lsm.cli.instance_views import instances_table

if TYPE_CHECKING:
    from lsm.client import Client


def discovered(
    ctx: typer.Context,
    resource_id: Annotated[
        str | None, typer.Argument(help="One discovered resource id; all when absent.")
    ] = None,
    resource_type: Annotated[str | None, typer.Option("--type", help="Only this resource type.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only resources of this agent.")] = None,
    managed: Annotated[
        bool | None, typer.Option("--managed/--unmanaged", help="Only managed, or only unmanaged, ones.")
    ] = None,
    discovered_by: Annotated[
        str | None, typer.Option("--discovered-by", help="Only what this discovery resource found.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many.")] = 0,
) -> None:
    """Resources the discovery resources found, whether managed, and who adopted them."""

    def request(client: Client) -> Any:
        if resource_id is not None:
            return client.discovered_resource(resource_id)
        return client.discovered(
            resource_type=resource_type,
            agent=agent,
            managed=managed,
            discovered_by=discovered_by,
            limit=limit,
            offset=offset,
        )

    def show(data: Any) -> None:
        if isinstance(data, dict):
            render.print_key_values(out, data, title=str(data.get("id")))
            return
        table = render.table(
            "discovered resources", ("id", "managed", "adopted by", "discovered by", "last seen")
        )
        for row in data:
            table.add_row(
                escape(row["id"]),
                "yes" if row["managed"] else "no",
                render.cell(row.get("adopted_by")),
                escape(row["discovered_by"]),
                render.cell(row["last_seen"]),
            )
        out.print(table)

    call(ctx, request, show)


def adopt(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="Entity (API name) the instances are made of.")],
    discovered_ids: Annotated[list[str], typer.Argument(help="Discovered resource ids to adopt.")],
    initial_state: Annotated[
        str | None, typer.Option("--initial-state", help="An adoption state of the lifecycle.")
    ] = None,
) -> None:
    """Adopt discovered resources as instances of ENTITY: all of them, or none."""
    call(
        ctx,
        lambda c: c.adopt(entity, discovered_ids, initial_state=initial_state),
        lambda instances: out.print(instances_table(instances, f"adopted as {entity}")),
    )
