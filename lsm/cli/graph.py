"""``lsm graph owners|sets|requires|lifecycle``: pictures as SVG (default) or Graphviz DOT.

The server answers the graph as data (``?format=json``); this command draws it with
``lsm.graph`` — the same writers the API uses — so the CLI needs no Graphviz either.
``-o FILE`` writes the picture to a file, else it goes to standard output; ``--json`` writes
the graph as the server answered it instead of drawing it::

    lsm graph owners --entity router --id mgmt_ip=10.0.0.1 -o tree.svg
    lsm graph requires tree-a --format dot | dot -Tpng > tree-a.png
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from lsm.cli.calls import call
from lsm.cli.console import err
from lsm.cli.options import shared

app = typer.Typer(
    help="Pictures: owner trees, resource sets, requires graphs, lifecycles (SVG or DOT).",
    no_args_is_help=True,
)


class Format(StrEnum):
    SVG = "svg"
    DOT = "dot"


FormatOption = Annotated[Format, typer.Option("--format", "-f", help="svg (default) or dot.")]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")]
VersionOption = Annotated[int | None, typer.Option("--version", help="Desired-state version (newest).")]


def _draw(ctx: typer.Context, fmt: Format, output: Path | None, kind: str, **params: Any) -> None:
    """Ask for the graph as data and write it drawn, or as that data with ``--json``."""
    from lsm.graph import Graph, to_dot, to_svg

    as_json = shared(ctx).json

    def show(data: dict[str, Any]) -> None:
        graph = Graph.from_json(data)
        if as_json:
            text = json.dumps(data, indent=2) + "\n"
        else:
            text = to_dot(graph) if fmt is Format.DOT else to_svg(graph)
        if output is None:
            typer.echo(text, nl=False)
        else:
            output.write_text(text, encoding="utf-8")
            err.print(f"wrote {len(graph.nodes)} nodes, {len(graph.edges)} edges to {output}")

    call(ctx, lambda c: c.graph(kind, **params), show, raw=False)


@app.command("owners")
def graph_owners(
    ctx: typer.Context,
    entity: Annotated[str | None, typer.Option("--entity", help="Only this entity's instances.")] = None,
    instance: Annotated[
        str | None,
        typer.Option("--id", help="One tree: around this instance (id, or attr=value with --entity)."),
    ] = None,
    fmt: FormatOption = Format.SVG,
    output: Output = None,
) -> None:
    """Ownership trees: an edge from each owner to what it owns."""
    _draw(ctx, fmt, output, "owners", entity=entity, id=instance)


@app.command("sets")
def graph_sets(
    ctx: typer.Context,
    version: VersionOption = None,
    fmt: FormatOption = Format.SVG,
    output: Output = None,
) -> None:
    """The resource sets of a desired-state version and their resources."""
    _draw(ctx, fmt, output, "sets", version=version)


@app.command("requires")
def graph_requires(
    ctx: typer.Context,
    set_name: Annotated[
        str, typer.Argument(metavar="SET", help="The resource set (shared: the shared set).")
    ],
    version: VersionOption = None,
    fmt: FormatOption = Format.SVG,
    output: Output = None,
) -> None:
    """One set's resources and their requires, in deploy order (required -> requirer)."""
    _draw(ctx, fmt, output, "requires", set=set_name, version=version)


@app.command("lifecycle")
def graph_lifecycle(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Lifecycle name, e.g. simple.")],
    fmt: FormatOption = Format.SVG,
    output: Output = None,
) -> None:
    """A lifecycle as the environment knows it (offline: ``lsm lifecycle show NAME --dot``)."""
    _draw(ctx, fmt, output, "lifecycle", name=name)
