"""``lsm lifecycle show``: a lifecycle's states and transfers, read offline from the lifecycle
files (no server), as tables, Graphviz DOT or JSON."""

from __future__ import annotations

from typing import Annotated

import typer

from lsm.cli.calls import print_json
from lsm.cli.console import out
from lsm.cli.errors import errors_reported
from lsm.cli.options import shared

app = typer.Typer(help="Lifecycles (read offline from the lifecycle files).", no_args_is_help=True)


@app.command("show")
def lifecycle_show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lifecycle name, e.g. simple.")],
    dot: Annotated[bool, typer.Option("--dot", help="Print Graphviz DOT instead of tables.")] = False,
    lifecycle_dir: Annotated[
        list[str] | None,
        typer.Option("--lifecycle-dir", help="Extra folder (or file) of lifecycles; repeatable."),
    ] = None,
) -> None:
    """States and transfers of a lifecycle, as tables or DOT; no server needed."""
    from lsm.lifecycle.loading import LifecycleRegistry
    from lsm.lifecycle.render import render_dot, render_table

    with errors_reported():
        spec = LifecycleRegistry.discover(lifecycle_dir or []).get(name)
    if shared(ctx).json:
        print_json(spec.model_dump(mode="json"))
    elif dot:
        typer.echo(render_dot(spec), nl=False)
    else:
        out.print(render_table(spec))
