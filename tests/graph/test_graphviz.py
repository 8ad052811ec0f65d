"""Layout by Graphviz ``dot`` (``lsm.graph.graphviz``) and the fall-back when it is missing."""

from __future__ import annotations

import itertools
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from lsm.graph import graphviz as gv
from lsm.graph import lifecycle_graph, to_svg
from lsm.graph.render import _clean
from lsm.lifecycle.loading import load_lifecycle_file

LIFECYCLE = Path(__file__).resolve().parents[2] / "lifecycles/lsm_lifecycles/simple_with_delete_validate.yaml"
needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="no Graphviz dot (Debian's graphviz package)"
)


@needs_dot
def test_dot_places_every_box_apart_on_a_page_wide_canvas() -> None:
    graph = lifecycle_graph(load_lifecycle_file(LIFECYCLE))
    placed = gv.dot_layout(graph, _clean)
    assert (
        placed is not None and len(placed.boxes) == len(graph.nodes) and len(placed.edges) == len(graph.edges)
    )
    for a, b in itertools.combinations(placed.boxes, 2):
        assert a.x + a.width <= b.x or b.x + b.width <= a.x or a.y + a.height <= b.y or b.y + b.height <= a.y
    for box in placed.boxes:
        assert box.x >= 0 and box.x + box.width <= placed.width and 0 <= box.y <= placed.height
    assert all(path.startswith("M") and " C" in path for path, _, _ in placed.edges)
    svg = to_svg(graph)
    assert 'data-layout="graphviz"' in svg
    ET.fromstring(svg)


def test_without_dot_the_builtin_layout_draws_the_same_picture(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = lifecycle_graph(load_lifecycle_file(LIFECYCLE))
    monkeypatch.setattr(gv, "dot_binary", lambda: None)
    svg = to_svg(graph)
    assert 'data-layout="builtin"' in svg
    root = ET.fromstring(svg)
    assert len(root.findall(".//{http://www.w3.org/2000/svg}g[@class='edge']")) == len(graph.edges)


def test_a_failing_or_missing_dot_falls_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    broken = tmp_path / "dot"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(gv, "dot_binary", lambda: str(broken))
    graph = lifecycle_graph(load_lifecycle_file(LIFECYCLE))
    assert gv.dot_layout(graph, _clean) is None
    assert 'data-layout="builtin"' in to_svg(graph)


def test_owner_trees_and_sets_are_labelled_by_identity_when_known() -> None:
    from dataclasses import dataclass

    from lsm.graph import owner_tree_graph, resource_sets_graph

    @dataclass
    class Instance:
        id: str
        service_entity: str
        state: str
        owner: str | None

    tree = owner_tree_graph(
        [Instance("r" * 36, "router", "up", None), Instance("p" * 36, "port", "up", "r" * 36)],
        identities={"r" * 36: "10.0.0.1"},
    )
    assert [n.label for n in tree.nodes] == ["router\n10.0.0.1\nup", "port\npppppppp\nup"]
    sets = resource_sets_graph({"r" * 36: ["x"]}, names={"r" * 36: "router 10.0.0.1"})
    assert sets.nodes[0].label == "router 10.0.0.1\n1 resources"
