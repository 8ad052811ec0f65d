"""Layout by Graphviz's ``dot``, when the binary is installed (Debian's ``graphviz`` package).

Why Graphviz: it is the layered layout the project's own (``lsm.graph.layout``) imitates, done
completely: edges routed as splines around the boxes, parallel edges kept apart, and edge labels
placed as nodes of their own so no two labels and no label and box overlap. It runs on the
server, so every client (the console, the API's SVG route, the CLI) gets the same picture and the
browser needs no script to lay anything out; no JavaScript layout library is shipped or fetched.

Only the positions come from ``dot`` (its JSON output): ``lsm.graph.render`` writes the SVG
itself, so the picture keeps its classes, ids, titles and links whichever engine placed it. When
``dot`` is missing, fails, or the graph is larger than ``MOST_NODES``/``MOST_EDGES`` (``dot``'s cost
grows faster than linearly), ``dot_layout`` answers ``None`` and the built-in layout is used.

Labels are measured by ``dot`` a little larger than they are drawn (``LABEL_FONT`` against the
SVG's sizes), so a browser's font, a little wider than Graphviz's metrics, still fits the room.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsm.graph.layout import Box, label_lines
from lsm.graph.model import Graph

#: graphs larger than this are laid out by ``lsm.graph.layout`` (quick at any size)
MOST_NODES = 150
MOST_EDGES = 400
#: how long ``dot`` may take before the built-in layout is used instead
TIMEOUT = 10.0
#: a drawing wider than this (a page) is laid out in the other direction too, and the narrower
#: of the two is kept: a lifecycle's many labelled transfers make long ranks side by side
PAGE_WIDTH = 1400.0
#: room around the drawing, in SVG units
MARGIN = 24.0
#: font sizes ``dot`` measures labels with (the SVG draws nodes at 12 px and edges at 10 px)
NODE_FONT = 13
LABEL_FONT = 11.5


@dataclass(frozen=True, slots=True)
class Placed:
    """A ``dot`` layout in SVG coordinates: node boxes in node order, each edge's path and label
    point in edge order, and the canvas size."""

    boxes: tuple[Box, ...]
    edges: tuple[tuple[str, float, float], ...]
    width: float
    height: float


def dot_binary() -> str | None:
    """The ``dot`` executable on ``PATH``, if any."""
    return shutil.which("dot")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def layout_source(graph: Graph, clean: Callable[[str], str], direction: str | None = None) -> str:
    """The DOT ``dot`` lays out: nodes named by position (ids may hold anything), labels as drawn."""
    lines = [
        "digraph g {",
        f"  rankdir={direction or graph.direction}; nodesep=0.2; ranksep=0.35; splines=true;",
        f'  node [shape=box, fontname="Helvetica", fontsize={NODE_FONT}, margin="0.15,0.08"];',
        f'  edge [fontname="Helvetica", fontsize={LABEL_FONT}];',
    ]
    for i, node in enumerate(graph.nodes):
        lines.append(f"  n{i} [label={_quote(chr(10).join(label_lines(clean(node.label))))}];")
    for edge in graph.edges:
        s, t = graph.position(edge.source), graph.position(edge.target)
        label = f" [label={_quote(chr(10).join(label_lines(clean(edge.label))))}]" if edge.label else ""
        lines.append(f"  n{s} -> n{t}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _point(text: str) -> tuple[float, float]:
    x, y = text.split(",")[-2:]
    return float(x), float(y)


def dot_layout(graph: Graph, clean: Callable[[str], str]) -> Placed | None:
    """``graph`` laid out by ``dot`` (``None``: no ``dot``, too large, or ``dot`` failed)."""
    binary = dot_binary()
    if binary is None or not graph.nodes or len(graph.nodes) > MOST_NODES or len(graph.edges) > MOST_EDGES:
        return None
    placed = _run(binary, graph, clean, graph.direction)
    if placed is not None and placed.width > PAGE_WIDTH:
        other = _run(binary, graph, clean, "TB" if graph.direction == "LR" else "LR")
        if other is not None and other.width < placed.width:
            return other
    return placed


def _run(binary: str, graph: Graph, clean: Callable[[str], str], direction: str) -> Placed | None:
    try:
        done = subprocess.run(
            [binary, "-Tjson"],
            input=layout_source(graph, clean, direction),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        return _placed(graph, json.loads(done.stdout))
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, IndexError):
        return None


def _placed(graph: Graph, data: dict[str, Any]) -> Placed:
    _, _, right, top = (float(v) for v in str(data["bb"]).split(","))

    def at(x: float, y: float) -> tuple[float, float]:  # dot's origin is bottom-left
        return x + MARGIN, top - y + MARGIN

    objects = {int(o["_gvid"]): o for o in data.get("objects", [])}
    boxes = []
    for i in range(len(graph.nodes)):
        found = objects[i]
        cx, cy = at(*_point(found["pos"]))
        width, height = float(found["width"]) * 72, float(found["height"]) * 72
        boxes.append(Box(cx - width / 2, cy - height / 2, width, height, 0, i))
    edges: list[tuple[str, float, float]] = [("", 0.0, 0.0)] * len(graph.edges)
    for found in data.get("edges", []):
        edges[int(found["_gvid"])] = _edge(found, at)
    return Placed(tuple(boxes), tuple(edges), right + 2 * MARGIN, top + 2 * MARGIN)


def _edge(
    found: dict[str, Any], at: Callable[[float, float], tuple[float, float]]
) -> tuple[str, float, float]:
    """An edge's SVG path (its spline, then on to the arrow's tip) and its label's centre."""
    end = None
    points = []
    for part in str(found["pos"]).split():
        if part.startswith("e,"):
            end = at(*_point(part))
        elif not part.startswith("s,"):
            points.append(at(*_point(part)))

    def n(v: float) -> str:
        return f"{v:.1f}".rstrip("0").rstrip(".")

    path = f"M{n(points[0][0])},{n(points[0][1])}"
    for k in range(1, len(points) - 2, 3):
        (ax, ay), (bx, by), (cx, cy) = points[k : k + 3]
        path += f" C{n(ax)},{n(ay)} {n(bx)},{n(by)} {n(cx)},{n(cy)}"
    if end is not None:
        path += f" L{n(end[0])},{n(end[1])}"
    lx, ly = at(*_point(found["lp"])) if "lp" in found else points[len(points) // 2]
    return path, lx, ly
