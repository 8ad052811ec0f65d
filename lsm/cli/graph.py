"""``lsm graph owners|sets|requires|lifecycle``: pictures as SVG (default) or Graphviz DOT.

The server answers the graph as data (``?format=json``); this command draws it with
``lsm.graph`` — the same writers the API uses — so the CLI needs no Graphviz either.
``-o FILE`` writes the picture to a file, else it goes to standard output::

    lsm graph owners --entity router --id mgmt_ip=10.0.0.1 -o tree.svg
    lsm graph requires tree-a --format dot | dot -Tpng > tree-a.png
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from lsm.cli import DEFAULT_URL, Environment, Url, app, call, err

graph_app = typer.Typer(
    help="Pictures: owner trees, resource sets, requires graphs, lifecycles (SVG or DOT).",
    no_args_is_help=True,
)
app.add_typer(graph_app, name="graph")


class Format(StrEnum):
    SVG = "svg"
    DOT = "dot"


FormatOption = Annotated[Format, typer.Option("--format", "-f", help="svg (default) or dot.")]
Output = Annotated[Path | None, typer.Option("--output", "-o", help="Write to this file.")]
VersionOption = Annotated[int | None, typer.Option("--version", help="Desired-state version (newest).")]


def _draw(
    url: str, environment: str | None, fmt: Format, output: Path | None, kind: str, **params: Any
) -> None:
    from lsm.graph import Graph, to_dot, to_svg

    def show(data: dict[str, Any]) -> None:
        graph = Graph.from_json(data)
        text = to_dot(graph) if fmt is Format.DOT else to_svg(graph)
        if output is None:
            typer.echo(text, nl=False)
        else:
            output.write_text(text, encoding="utf-8")
            err.print(f"wrote {len(graph.nodes)} nodes, {len(graph.edges)} edges to {output}")

    call(url, environment, False, lambda c: c.graph(kind, **params), show)


@graph_app.command("owners")
def graph_owners(
    entity: Annotated[str | None, typer.Option("--entity", help="Only this entity's instances.")] = None,
    instance: Annotated[
        str | None,
        typer.Option("--id", help="One tree: around this instance (id, or attr=value with --entity)."),
    ] = None,
    fmt: FormatOption = Format.SVG,
    output: Output = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
) -> None:
    """Ownership trees: an edge from each owner to what it owns."""
    _draw(url, environment, fmt, output, "owners", entity=entity, id=instance)


@graph_app.command("sets")
def graph_sets(
    version: VersionOption = None,
    fmt: FormatOption = Format.SVG,
    output: Output = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
) -> None:
    """The resource sets of a desired-state version and their resources."""
    _draw(url, environment, fmt, output, "sets", version=version)


@graph_app.command("requires")
def graph_requires(
    set_name: Annotated[
        str, typer.Argument(metavar="SET", help="The resource set (shared: the shared set).")
    ],
    version: VersionOption = None,
    fmt: FormatOption = Format.SVG,
    output: Output = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
) -> None:
    """One set's resources and their requires, in deploy order (required -> requirer)."""
    _draw(url, environment, fmt, output, "requires", set=set_name, version=version)


@graph_app.command("lifecycle")
def graph_lifecycle(
    name: Annotated[str, typer.Argument(help="Lifecycle name, e.g. simple.")],
    fmt: FormatOption = Format.SVG,
    output: Output = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
) -> None:
    """A lifecycle as the environment knows it (offline: ``lsm lifecycle show NAME --dot``)."""
    _draw(url, environment, fmt, output, "lifecycle", name=name)
