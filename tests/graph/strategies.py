"""Hypothesis strategies for random graphs: cycles, self-loops, parallel edges and odd labels."""

from __future__ import annotations

from hypothesis import strategies as st

from lsm.graph import Edge, Graph, Node

#: Any text, including quotes, backslashes, newlines, ``<>&`` and characters XML can not hold.
odd_text = st.text(max_size=30)


@st.composite
def graphs(draw: st.DrawFn, max_nodes: int = 25) -> Graph:
    ids = draw(st.lists(odd_text, min_size=0, max_size=max_nodes, unique=True))
    nodes = tuple(
        Node(
            id=node_id,
            label=draw(odd_text),
            kind=draw(st.sampled_from(["", "initial", "deleted", "shared", "x y", "root deleted"])),
            color=draw(st.none() | st.sampled_from(["salmon", "#abc", 'red"><script>'])),
            tooltip=draw(odd_text),
            href=draw(st.none() | st.sampled_from(["/console/x?a=1&b=2", "javascript:alert(1)", "#top"])),
        )
        for node_id in ids
    )
    edges: list[Edge] = []
    if ids:
        pairs = draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=3 * len(ids)))
        for source, target in pairs:
            edges.append(
                Edge(
                    source,
                    target,
                    label=draw(odd_text),
                    style=draw(st.sampled_from(["solid", "dashed", "dotted", "bold"])),
                    color=draw(st.none() | st.just("red")),
                )
            )
    return Graph(
        title=draw(odd_text), nodes=nodes, edges=tuple(edges), direction=draw(st.sampled_from(["LR", "TB"]))
    )
