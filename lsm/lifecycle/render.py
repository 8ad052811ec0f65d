"""Showing a lifecycle to a person: rich tables for the terminal, Graphviz DOT for a picture.

The picture itself is ``lsm.graph.lifecycle_graph``; DOT and SVG come from ``lsm.graph.render``,
the one writer of both.

Pure functions from a ``LifecycleSpec`` to a renderable or a string; ``lsm lifecycle show``
prints them. Transfers are numbered from 1 in definition order, as docs/semantics.md §1 numbers them,
so that a table row, a DOT edge and the documentation can refer to each other.

Example::

    rich.print(render_table(spec))
    Path("simple.dot").write_text(render_dot(spec))   # dot -Tsvg simple.dot
"""

from __future__ import annotations

from rich.table import Table

from lsm.graph.builders import LABEL_COLOURS, lifecycle_graph
from lsm.graph.render import to_dot
from lsm.lifecycle.spec import LifecycleSpec

__all__ = ["LABEL_COLOURS", "render_dot", "render_states_table", "render_table", "render_transfers_table"]

_RICH_STYLES: dict[str, str] = {"info": "cyan", "success": "green", "warning": "yellow", "danger": "red"}


def _flag(value: bool) -> str:
    return "yes" if value else ""


def render_states_table(spec: LifecycleSpec) -> Table:
    """One row per state with its flags; the initial state(s) marked."""
    table = Table(title=f"{spec.name}: states", title_justify="left")
    for column in ("state", "label", "export", "validate self", "validate others", "purge", "deleted"):
        table.add_column(column, overflow="fold")
    initial = set(spec.initial_states)
    for state in spec.states:
        name = f"{state.name} (initial)" if state.name in initial else state.name
        table.add_row(
            name,
            f"[{_RICH_STYLES[state.label]}]{state.label}[/]",
            _flag(state.export_resources),
            state.validate_self or "-",
            state.validate_others or "-",
            _flag(state.purge_resources),
            _flag(state.deleted),
        )
    return table


def render_transfers_table(spec: LifecycleSpec) -> Table:
    """One numbered row per transfer: source, target, error, trigger, validate, operations (an
    edge that asks for an export anew, ``request_export``, says so there); a failed export's
    transfers show their trigger, ``export_failed``."""
    # The error-operation column only when some transfer has one: most lifecycles have none.
    with_error_ops = any(t.error_operation for t in spec.transfers)
    columns = ["#", "source", "target", "error", "trigger", "validate", "operation"]
    table = Table(title=f"{spec.name}: transfers", title_justify="left")
    for column in columns + (["error operation"] if with_error_ops else []):
        table.add_column(column, overflow="fold")  # never cut a state name short
    for number, t in enumerate(spec.transfers, start=1):
        row = [
            str(number),
            t.source,
            t.target,
            t.error or "",
            t.trigger,
            _flag(t.validate),
            ", ".join(op for op in (t.target_operation, "request export" * t.request_export) if op),
        ]
        table.add_row(*row, *([t.error_operation or ""] if with_error_ops else []))
    return table


def render_table(spec: LifecycleSpec) -> Table:
    """The states table above the transfers table, as one renderable."""
    grid = Table.grid(padding=(1, 0))
    grid.add_column()
    grid.add_row(render_states_table(spec))
    grid.add_row(render_transfers_table(spec))
    return grid


def render_dot(spec: LifecycleSpec) -> str:
    """The lifecycle as a Graphviz digraph (``lsm.graph.lifecycle_graph`` drawn by ``to_dot``).

    States are filled by label, deleted states are drawn doubled and initial states bold; every
    edge is labelled ``<number>: <trigger> [validate] {operation}``, error edges are dashed red.
    """
    return to_dot(lifecycle_graph(spec))
