"""``lsm selector list``: the selectors of partial compiles this environment can use."""

from __future__ import annotations

from typing import Any

import typer

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out

app = typer.Typer(help="Selectors of partial compiles.", no_args_is_help=True)


@app.command("list")
def selector_list(ctx: typer.Context) -> None:
    """The selectors this environment can use, with their parameters."""

    def show(selectors: list[dict[str, Any]]) -> None:
        table = render.table("selectors", ("name", "parameters", "class"))
        for item in selectors:
            params = ", ".join(
                f"{name}{'' if p.get('required') else '?'}: {p.get('type')}"
                for name, p in (item.get("parameters") or {}).items()
            )
            table.add_row(item["name"], params or "-", item.get("class", ""))
        out.print(table)

    call(ctx, lambda c: c.list_selectors(), show)
