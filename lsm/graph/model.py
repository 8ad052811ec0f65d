"""A picture as plain data: nodes, edges and a title, for the renderers in ``lsm.graph.render``.

The builders (``lsm.graph.builders``) turn lifecycles, owner trees and resource sets into a
``Graph``; the renderers turn any ``Graph`` into DOT or SVG. Keeping the picture as data between
the two means one DOT writer and one SVG layout for every picture the engine draws, and lets the
API answer ``?format=json`` with the same graph a console draws itself.

``kind`` is a space-separated list of words; the renderers style the ones they know:
``initial`` (bold border), ``deleted`` (double border), ``shared`` (dashed border) and
``root`` (bold border). Other words are kept for the JSON form and CSS classes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Edge styles both renderers understand.
EDGE_STYLES = ("solid", "dashed", "dotted", "bold")
#: Layout directions: left-to-right or top-to-bottom.
DIRECTIONS = ("LR", "TB")


@dataclass(frozen=True, slots=True)
class Node:
    """One box: ``id`` is unique in its graph, ``label`` is what a person reads (may hold newlines)."""

    id: str
    label: str
    kind: str = ""
    color: str | None = None
    tooltip: str = ""
    href: str | None = None

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(self.kind.split())


@dataclass(frozen=True, slots=True)
class Edge:
    """An arrow from ``source`` to ``target`` (node ids); ``color`` is optional, black by default."""

    source: str
    target: str
    label: str = ""
    style: str = "solid"
    color: str | None = None


@dataclass(frozen=True, slots=True)
class Graph:
    """Nodes and edges in the order the builder gave them; the renderers keep that order."""

    title: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    direction: str = "LR"
    _index: dict[str, int] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for position, node in enumerate(self.nodes):
            if node.id in index:
                raise ValueError(f"node id {node.id!r} appears twice in graph {self.title!r}")
            index[node.id] = position
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in index:
                    raise ValueError(f"edge {edge.source!r} -> {edge.target!r} names unknown node {end!r}")
            if edge.style not in EDGE_STYLES:
                raise ValueError(f"edge style {edge.style!r} is not one of {', '.join(EDGE_STYLES)}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction {self.direction!r} is not one of {', '.join(DIRECTIONS)}")
        object.__setattr__(self, "_index", index)

    def position(self, node_id: str) -> int:
        """The node's index in ``nodes`` (KeyError for an unknown id)."""
        return self._index[node_id]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Graph:
        """The graph ``to_json`` wrote (the API's ``?format=json``); ValueError on a broken one."""
        return cls(
            title=str(data.get("title", "")),
            nodes=tuple(Node(**node) for node in data.get("nodes", [])),
            edges=tuple(Edge(**edge) for edge in data.get("edges", [])),
            direction=str(data.get("direction", "LR")),
        )

    def to_json(self) -> dict[str, Any]:
        """The graph as JSON-able data: ``{title, direction, nodes: [...], edges: [...]}``."""
        return {
            "title": self.title,
            "direction": self.direction,
            "nodes": [asdict(node) for node in self.nodes],
            "edges": [asdict(edge) for edge in self.edges],
        }
