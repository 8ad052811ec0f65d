"""``lsm catalog list|show``: the service entities of the environment's model."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out

if TYPE_CHECKING:
    from lsm.client import Client

app = typer.Typer(help="The service catalog: entities of the environment's model.", no_args_is_help=True)


@app.command("list")
def catalog_list(ctx: typer.Context) -> None:
    """Every service entity with its lifecycle, identity, owner and instance counts."""

    def show(entities: list[dict[str, Any]]) -> None:
        table = render.table(
            "service catalog", ("entity", "lifecycle", "identity", "owner", "attributes", "instances")
        )
        for entity in entities:
            lifecycle = entity.get("lifecycle")
            summary = entity.get("instance_summary") or {}
            table.add_row(
                escape(entity["name"]),
                escape(lifecycle.get("name", "") if isinstance(lifecycle, dict) else str(lifecycle or "")),
                render.cell(entity.get("identity")),
                render.cell(entity.get("owner")),
                escape(", ".join(a["name"] for a in entity.get("attributes", []))),
                escape(", ".join(f"{k}: {v}" for k, v in summary.items()))
                if isinstance(summary, dict)
                else "",
            )
        out.print(table)

    call(ctx, lambda c: c.catalog(), show)


@app.command("show")
def catalog_show(
    ctx: typer.Context,
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    schema: Annotated[bool, typer.Option("--schema", help="Print the entity's JSON schema.")] = False,
) -> None:
    """One entity: its attributes (type, modifier, default) and relations."""

    def show(data: dict[str, Any]) -> None:
        if schema:
            typer.echo(json.dumps(data, indent=2))
            return
        lifecycle = data.get("lifecycle")
        header = {k: v for k, v in data.items() if k not in ("attributes", "relations", "lifecycle")}
        header["lifecycle"] = lifecycle.get("name") if isinstance(lifecycle, dict) else lifecycle
        render.print_key_values(out, header, title=f"entity {data.get('name', entity)}")
        table = render.table(
            "attributes", ("name", "type", "modifier", "required", "default", "relation", "description")
        )
        for a in data.get("attributes", []):
            table.add_row(
                escape(a["name"]),
                render.cell(a.get("type")),
                render.cell(a.get("modifier")),
                "yes" if a.get("required") else "",
                "" if a.get("required") else render.cell(a.get("default")),
                render.cell((a.get("relation") or {}).get("target")),
                render.cell(a.get("description")),
            )
        out.print(table)

    def request(client: Client) -> dict[str, Any]:
        return client.schema(entity) if schema else client.entity(entity)

    call(ctx, request, show)
