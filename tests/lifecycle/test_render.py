"""Rendering: the DOT graph and the tables show every state and every numbered transfer."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from lsm.lifecycle import LifecycleRegistry, LifecycleSpec, render_dot, render_table


@pytest.fixture(scope="module", params=["simple", "simple_with_delete_validate"])
def spec(request: pytest.FixtureRequest) -> LifecycleSpec:
    return LifecycleRegistry.discover().get(request.param)


def node_lines(dot: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in re.finditer(r'^  "([^"]+)" \[label=.*$', dot, re.M)}


def edge_lines(dot: str) -> list[str]:
    return [line for line in dot.splitlines() if " -> " in line]


def test_dot_is_one_balanced_digraph(spec: LifecycleSpec) -> None:
    dot = render_dot(spec)
    assert dot.startswith(f'digraph "{spec.name}" {{\n')
    assert dot.rstrip().endswith("}")
    unquoted = re.sub(r'"(\\.|[^"\\])*"', '""', dot)
    assert '"' not in unquoted.replace('""', "")
    assert unquoted.count("{") == unquoted.count("}") == 1
    assert all(line.endswith(";") for line in dot.splitlines()[1:-1])


def test_dot_has_a_node_per_state_coloured_by_label(spec: LifecycleSpec) -> None:
    nodes = node_lines(render_dot(spec))
    assert set(nodes) == {s.name for s in spec.states}
    assert 'fillcolor="palegreen"' in nodes["up"]
    assert 'fillcolor="salmon"' in nodes["failed"]
    assert 'fillcolor="gold"' in nodes["update_start_failed"]
    assert "peripheries=2" in nodes["terminated"]
    assert "peripheries" not in nodes["deleting"]
    assert "penwidth=2" in nodes["start"]


def test_dot_has_an_edge_per_outcome_error_edges_dashed(spec: LifecycleSpec) -> None:
    edges = edge_lines(render_dot(spec))
    assert len(edges) == len(spec.transfers) + sum(1 for t in spec.transfers if t.error)
    dashed = [e for e in edges if "style=dashed" in e]
    # error edges, and the transfers of a failed export, which are an error outcome themselves
    assert len(dashed) == sum(1 for t in spec.transfers if t.error or t.trigger == "export_failed")
    assert any(
        '"creating" -> "failed"' in e and ': export_failed"' in e and "style=dashed" in e for e in edges
    )
    assert any('"start" -> "acknowledged" [label="1: auto [validate]"' in e for e in edges)
    assert any('"acknowledged" -> "creating" [label="2: auto\\n{promote}"' in e for e in edges)
    assert any('"start" -> "rejected"' in e and "style=dashed" in e for e in edges)


def test_dot_quotes_awkward_names() -> None:
    spec = LifecycleSpec.from_data(
        {
            "name": 'say "hi"',
            "initial_state": "a b",
            "states": [{"name": "a b"}, {"name": 'c"d'}],
            "transfers": [{"source": "a b", "target": 'c"d', "trigger": "on_update"}],
        }
    )
    dot = render_dot(spec)
    assert 'digraph "say \\"hi\\"" {' in dot
    assert '"a b" -> "c\\"d"' in dot


def test_table_lists_states_and_numbered_transfers(spec: LifecycleSpec) -> None:
    console = Console(width=250, record=True, color_system=None)
    console.print(render_table(spec))
    text = console.export_text()
    for state in spec.states:
        assert re.search(rf"\b{state.name}\b", text)
    assert f"{spec.name}: states" in text and f"{spec.name}: transfers" in text
    assert re.search(rf"^│ {len(spec.transfers)}\s+│", text, re.M)
    assert "clear candidate" in text and "promote" in text


def test_error_operations_get_a_column_only_when_used() -> None:
    spec = LifecycleSpec.from_data(
        {
            "name": "tiny",
            "initial_state": "start",
            "states": [{"name": "start"}, {"name": "up"}],
            "transfers": [
                {
                    "source": "start",
                    "target": "up",
                    "error": "start",
                    "trigger": "auto",
                    "validate": True,
                    "error_operation": "clear candidate",
                }
            ],
        }
    )
    console = Console(width=200, record=True, color_system=None)
    console.print(render_table(spec))
    text = console.export_text()
    assert "error operation" in text and "clear candidate" in text
    assert '"start" -> "start" [label="1: auto [validate] error\\n{clear candidate}"' in render_dot(spec)
    bundled = Console(width=200, record=True, color_system=None)
    bundled.print(render_table(LifecycleRegistry.discover().get("simple")))
    assert "error operation" not in bundled.export_text()


def test_the_transfers_table_shows_a_failed_export_and_an_export_asked_anew() -> None:
    from rich.console import Console

    from lsm.lifecycle import LifecycleRegistry, render_transfers_table

    console = Console(width=250, record=True)
    console.print(render_transfers_table(LifecycleRegistry.discover().get("simple")))
    lines = console.export_text().splitlines()
    failing = next(line for line in lines if line.split("│")[1:2] == [" 33 "])
    assert "deleting" in failing and "delete_failed" in failing and "export_failed" in failing
    again = next(line for line in lines if line.split("│")[1:2] == [" 35 "])
    assert "on_delete" in again and "request export" in again
