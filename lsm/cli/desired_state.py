"""``lsm desired-state``: versions, one version's sets or resources, and the diff of two versions.

Why a group with a default command: ``lsm desired-state [VERSION] [--resources]`` predates
``lsm desired-state diff A B``. The group sends every invocation whose first word is not one
of its commands to ``show``, so both spellings work and ``diff`` reads as a subcommand.

Example::

    lsm desired-state                 # the versions, newest first
    lsm desired-state 7 --resources   # version 7's resources
    lsm desired-state diff 6 7        # sets and resources that differ, changed fields marked
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out

if TYPE_CHECKING:
    from lsm.client import Client


class _DefaultShow(TyperGroup):
    """A group that runs ``show`` unless its first argument names another of its commands."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # ctx is typer's click Context (typer may carry its own click): Any keeps us off its path
        if args == ["--help"]:
            return super().parse_args(ctx, args)
        if not args or args[0] not in self.commands:
            args = ["show", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_DefaultShow,
    help="Desired-state versions: list, show one (VERSION [--resources]), diff two (diff A B).",
)


@app.command("show")
def show_versions(
    ctx: typer.Context,
    version: Annotated[int | None, typer.Argument(help="A version; all versions when absent.")] = None,
    resources: Annotated[bool, typer.Option("--resources", help="List the version's resources.")] = False,
) -> None:
    """Versions (newest first), or one version's sets or resources (the default command)."""

    def request(client: Client) -> Any:
        if version is None:
            return client.desired_states()
        return client.desired_state_resources(version) if resources else client.desired_state(version)

    def show(data: Any) -> None:
        if isinstance(data, dict):
            render.print_key_values(out, _named(data), title=f"desired state {version}")
            return
        if not data:
            out.note("[dim](none)[/]")
            return
        rows = [_named(row) for row in data]
        columns = tuple(dict.fromkeys(k for row in rows for k in row))
        table = render.table(None, columns)
        for row in rows:
            table.add_row(*(render.cell(row.get(c)) for c in columns))
        out.print(table)

    call(ctx, request, show)


def _named(row: dict[str, Any]) -> dict[str, Any]:
    """A version or a resource with its sets named as a person names them (``render.set_label``):
    set ids become names where the answer gives them, and the names map is not shown again."""
    names = row.get("set_names") or {}
    shown = {k: v for k, v in row.items() if k not in ("set_names", "set_name")}
    if "set" in row:
        shown["set"] = render.set_label(row["set"], row.get("set_name"))
    for key in ("sets_replaced", "sets_deleted"):
        if isinstance(row.get(key), list):
            shown[key] = [render.set_label(s, names) for s in row[key]]
    if isinstance(row.get("sets"), dict):
        shown["sets"] = {render.set_label(s, names): ids for s, ids in row["sets"].items()}
    return shown


_CHANGE_STYLE = {"added": "green", "removed": "red", "changed": "yellow"}


@app.command("diff")
def diff_versions(
    ctx: typer.Context,
    version: Annotated[int, typer.Argument(help="The version to compare from.", min=0)],
    other: Annotated[int, typer.Argument(help="The version to compare to.", min=0)],
) -> None:
    """What turns VERSION into OTHER: sets added/removed/changed, then resources and changed fields."""

    def show(data: dict[str, Any]) -> None:
        title = f"desired state {data['from_version']} -> {data['to_version']}"
        if not data["sets"] and not data["resources"]:
            out.print(f"{title}: [dim]no difference[/]")
            return
        sets = render.table(f"{title}: sets", ("set", "change", "resources before", "resources after"))
        for s in data["sets"]:
            style = _CHANGE_STYLE.get(s["change"], "")
            sets.add_row(
                escape(render.set_label(s["name"], s.get("set_name"))),
                f"[{style}]{s['change']}[/]",
                str(s["before_count"]),
                str(s["after_count"]),
            )
        out.print(sets)
        table = render.table(f"{title}: resources", ("resource", "change", "set", "fields"))
        for r in data["resources"]:
            style = _CHANGE_STYLE.get(r["change"], "")
            side = r["after"] or r["before"] or {}
            place = render.set_label(side.get("set"), side.get("set_name"))
            if r["before"] and r["after"] and r["before"].get("set") != r["after"].get("set"):
                before = r["before"]
                place = f"{render.set_label(before.get('set'), before.get('set_name'))} -> {place}"
            table.add_row(
                escape(r["id"]),
                f"[{style}]{r['change']}[/]",
                escape(place),
                escape(", ".join(r["fields"])),
            )
        out.print(table)

    call(ctx, lambda c: c.desired_state_diff(version, other), show)
