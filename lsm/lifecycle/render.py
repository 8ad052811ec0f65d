"""Showing a lifecycle to a person: rich tables for the terminal, Graphviz DOT for a picture.

Pure functions from a ``LifecycleSpec`` to a renderable or a string; ``lsm lifecycle show``
prints them. Transfers are numbered from 1 in definition order, as docs/semantics.md §1 numbers them,
so that a table row, a DOT edge and the documentation can refer to each other.

Example::

    rich.print(render_table(spec))
    Path("simple.dot").write_text(render_dot(spec))   # dot -Tsvg simple.dot
"""

from __future__ import annotations

from rich.table import Table

from lsm.lifecycle.spec import LifecycleSpec, StateSpec, TransferSpec

#: Fill colours per state label, readable on white and in grey-scale print.
LABEL_COLOURS: dict[str, str] = {
    "info": "lightblue",
    "success": "palegreen",
    "warning": "gold",
    "danger": "salmon",
}
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
    """One numbered row per transfer: source, target, error, trigger, validate, operations."""
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
            t.target_operation or "",
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


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _node(state: StateSpec, initial: bool) -> str:
    attrs = {
        "label": _quote(state.name),
        "fillcolor": _quote(LABEL_COLOURS[state.label]),
        "peripheries": "2" if state.deleted else "1",
    }
    if initial:
        attrs["penwidth"] = "2"
    return f"  {_quote(state.name)} [{', '.join(f'{k}={v}' for k, v in attrs.items())}];"


def _edges(number: int, t: TransferSpec) -> list[str]:
    label = f"{number}: {t.trigger}" + (" [validate]" if t.validate else "")
    target_label = label + (f"\n{{{t.target_operation}}}" if t.target_operation else "")
    lines = [f"  {_quote(t.source)} -> {_quote(t.target)} [label={_quote(target_label)}];"]
    if t.error is not None:
        error_label = f"{label} error" + (f"\n{{{t.error_operation}}}" if t.error_operation else "")
        lines.append(
            f"  {_quote(t.source)} -> {_quote(t.error)} "
            f'[label={_quote(error_label)}, style=dashed, color="red", fontcolor="red"];'
        )
    return lines


def render_dot(spec: LifecycleSpec) -> str:
    """The lifecycle as a Graphviz digraph.

    States are filled by label, deleted states are drawn doubled and initial states bold; every
    edge is labelled ``<number>: <trigger> [validate] {operation}``, error edges are dashed red.
    """
    initial = set(spec.initial_states)
    lines = [
        f"digraph {_quote(spec.name)} {{",
        "  rankdir=LR;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    lines.extend(_node(state, state.name in initial) for state in spec.states)
    for number, transfer in enumerate(spec.transfers, start=1):
        lines.extend(_edges(number, transfer))
    lines.append("}")
    return "\n".join(lines) + "\n"
