"""DOT and SVG of any graph: well-formed, complete, escaped, deterministic, boxes apart."""

from __future__ import annotations

import itertools
import re
import time
import xml.etree.ElementTree as ET

from hypothesis import given, settings

from lsm.graph import Edge, Graph, Node, to_dot, to_svg
from lsm.graph.layout import label_lines, layout
from lsm.graph.render import _clean
from tests.graph.dot_parse import parse
from tests.graph.strategies import graphs

SVG = "{http://www.w3.org/2000/svg}"
AWKWARD = 'say "hi"\nto <b> & \\n'


def _svg_nodes(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if (g.get("class") or "").split()[:1] == ["node"]]


def _svg_edges(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if g.get("class") == "edge"]


def _label_of(group: ET.Element) -> str:
    text = group.find(f".//{SVG}text")
    assert text is not None
    return "\n".join(span.text or "" for span in text.iter(f"{SVG}tspan"))


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_dot_holds_every_node_and_edge_exactly(graph: Graph) -> None:
    dot = parse(to_dot(graph))
    assert dot.name == _clean(graph.title)
    # one DOT node per node, even where cleaning makes two ids alike; each named from its id
    assert len(dot.nodes) == len(graph.nodes)
    names = dict(zip((n.id for n in graph.nodes), dot.nodes, strict=True))
    for node in graph.nodes:
        assert names[node.id].rstrip("\u2032") == _clean(node.id).rstrip("\u2032")
        assert dot.nodes[names[node.id]]["label"] == _clean(node.label)
    assert len(dot.edges) == len(graph.edges)
    for (source, target, attrs), edge in zip(dot.edges, graph.edges, strict=True):
        assert (source, target) == (names[edge.source], names[edge.target])
        assert attrs.get("style", "solid") == edge.style


def test_ids_that_clean_alike_stay_distinct_nodes_in_dot() -> None:
    """``\x1f`` and ``\x08`` both clean to U+FFFD; merged, the edge between them would be a loop."""
    graph = Graph(
        "",
        (Node("\x1f", "a"), Node("\x08", "b"), Node("a\r\nb", "c"), Node("a\nb", "d")),
        (Edge("\x1f", "\x08"), Edge("a\r\nb", "a\nb")),
    )
    dot = parse(to_dot(graph))
    assert [dot.nodes[name]["label"] for name in dot.nodes] == ["a", "b", "c", "d"]
    assert [(s, t) for s, t, _ in dot.edges] == [("\ufffd", "\ufffd\u2032"), ("a\nb", "a\nb\u2032")]


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_svg_is_well_formed_and_complete(graph: Graph) -> None:
    svg = to_svg(graph)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    nodes = _svg_nodes(root)
    assert [g.get("data-id") for g in nodes] == [_clean(n.id) for n in graph.nodes]
    for group, node in zip(nodes, graph.nodes, strict=True):
        assert _label_of(group) == "\n".join(label_lines(_clean(node.label)))
        title = group.find(f"{SVG}title")
        assert title is not None and (title.text or "") == _clean(node.tooltip or node.label)
        link = group.find(f"{SVG}a")
        if link is not None:
            assert not link.get("href", "").lower().startswith("javascript:")
    ids = {g.get("data-id") for g in nodes}
    edges = _svg_edges(root)
    assert len(edges) == len(graph.edges)
    for group in edges:
        assert group.get("data-source") in ids and group.get("data-target") in ids
    assert "<script" not in svg


@settings(max_examples=150, deadline=None)
@given(graphs(max_nodes=40))
def test_boxes_never_overlap_and_fit_the_canvas(graph: Graph) -> None:
    placed = layout(graph)
    for box in placed.boxes:
        assert box.x >= 0 and box.x + box.width <= placed.width
        assert box.y >= 0 and box.y + box.height <= placed.height
    for a, b in itertools.combinations(placed.boxes, 2):
        apart = a.x + a.width <= b.x or b.x + b.width <= a.x or a.y + a.height <= b.y or b.y + b.height <= a.y
        assert apart, (a, b)


@settings(max_examples=50, deadline=None)
@given(graphs())
def test_layout_and_output_are_deterministic(graph: Graph) -> None:
    assert to_svg(graph) == to_svg(graph)
    assert to_dot(graph) == to_dot(graph)


def test_forward_edges_go_to_later_layers_and_cycles_are_broken() -> None:
    nodes = tuple(Node(name, name) for name in "abcd")
    edges = (Edge("a", "b"), Edge("b", "c"), Edge("c", "a"), Edge("c", "d"), Edge("d", "d"))
    placed = layout(Graph("cycle", nodes, edges))
    layers = [box.layer for box in placed.boxes]
    assert layers == [0, 1, 2, 3]
    assert placed.back_edges == frozenset({2, 4})  # c -> a closes the cycle; d -> d loops


def test_escaping_in_dot_and_svg() -> None:
    graph = Graph(
        AWKWARD,
        (Node(AWKWARD, AWKWARD, tooltip="<t> & 'q'"), Node("b", "b\x00c")),
        (Edge(AWKWARD, "b", label=AWKWARD),),
    )
    dot = to_dot(graph)
    assert '"say \\"hi\\"\\nto <b> & \\\\n"' in dot  # quotes and backslash escaped, newline as \n
    assert "\n" not in dot.split("\n  ", 5)[-1].split(";")[0]  # one statement per line
    svg = to_svg(graph)
    assert "&lt;b&gt; &amp;" in svg and "<b>" not in svg
    root = ET.fromstring(svg)
    assert _label_of(_svg_nodes(root)[1]) == "b\ufffdc"  # NUL can not be in XML: replaced


def test_a_few_hundred_nodes_lay_out_quickly_enough_to_serve() -> None:
    """Not a time limit: the measured cost is printed; the assertion is on the output's size."""
    n = 400
    nodes = tuple(Node(f"r{i}", f"net::Interface[r{i % 7},name=eth{i}]") for i in range(n))
    edges = tuple(Edge(f"r{i % n}", f"r{(i * 7 + 3) % n}") for i in range(2 * n))
    started = time.perf_counter()
    svg = to_svg(Graph("big", nodes, edges))
    print(f"to_svg {n} nodes/{2 * n} edges: {time.perf_counter() - started:.3f}s")
    assert len(re.findall(r'<g class="node[ "]', svg)) == n
