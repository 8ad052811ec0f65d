"""The one DOT writer and the one SVG writer for every ``Graph`` the engine draws.

``to_dot`` is for people who have Graphviz (``lsm graph ... --format dot | dot -Tpng``);
``to_svg`` writes a self-contained SVG the console can inline: laid out by Graphviz's ``dot``
when it is installed (``lsm.graph.graphviz``: splines, labels that never overlap), else by the
project's own small layout (``lsm.graph.layout``), so a picture is drawn either way. Every piece
of text is escaped for its target (DOT strings, XML), and characters XML can not carry at all
are replaced, so any instance name, attribute value or handler error can be drawn.
"""

from __future__ import annotations

import math
import re
from xml.sax.saxutils import escape

from lsm.graph.graphviz import dot_layout
from lsm.graph.layout import LINE_HEIGHT, Box, Layout, label_lines, layout
from lsm.graph.model import Edge, Graph, Node

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_DASHES = {"solid": "", "dashed": "6,4", "dotted": "2,3", "bold": ""}
_SAFE_HREF = re.compile(r"^(https?://|/|\.{0,2}/|#|\?)|^[^:]*$", re.I)
DEFAULT_FILL = "#f4f4f4"
DEFAULT_STROKE = "#333333"


def _clean(text: str) -> str:
    """Line breaks as ``\n`` and characters XML can not hold as U+FFFD, for both writers."""
    return _NOT_XML.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))


# -- DOT ----------------------------------------------------------------------------------------
def dot_quote(text: str) -> str:
    """``text`` as a DOT double-quoted string: backslashes, quotes and line breaks escaped."""
    text = _clean(text)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(pairs: dict[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in pairs.items())


def dot_names(nodes: tuple[Node, ...]) -> dict[str, str]:
    """Each node's DOT name: its cleaned id, kept distinct.

    Cleaning is not one-to-one (ids that differ only in characters XML can not hold, or in
    ``\r\n`` against ``\n``, clean to the same text), and two nodes with one DOT name would be
    drawn as one. A name already taken gets primes appended until it is free, in node order, so
    the names are deterministic and distinct.
    """
    names: dict[str, str] = {}
    taken: set[str] = set()
    for node in nodes:
        name = _clean(node.id)
        while name in taken:
            name += "\u2032"
        names[node.id] = name
        taken.add(name)
    return names


def _dot_node(node: Node, name: str) -> str:
    attrs = {"label": dot_quote(node.label)}
    if node.color:
        attrs["fillcolor"] = dot_quote(node.color)
    kinds = node.kinds
    if "deleted" in kinds:
        attrs["peripheries"] = "2"
    if kinds & {"initial", "root"}:
        attrs["penwidth"] = "2"
    if "shared" in kinds:
        attrs["style"] = dot_quote("rounded,filled,dashed")
    if node.tooltip:
        attrs["tooltip"] = dot_quote(node.tooltip)
    if node.href and _SAFE_HREF.match(node.href):
        attrs["URL"] = dot_quote(node.href)
    return f"  {dot_quote(name)} [{_attrs(attrs)}];"


def _dot_edge(edge: Edge, names: dict[str, str]) -> str:
    attrs: dict[str, str] = {}
    if edge.label:
        attrs["label"] = dot_quote(edge.label)
    if edge.style != "solid":
        attrs["style"] = edge.style
    if edge.color:
        attrs["color"] = dot_quote(edge.color)
        attrs["fontcolor"] = dot_quote(edge.color)
    tail = f" [{_attrs(attrs)}]" if attrs else ""
    source, target = names.get(edge.source, edge.source), names.get(edge.target, edge.target)
    return f"  {dot_quote(source)} -> {dot_quote(target)}{tail};"


def to_dot(graph: Graph) -> str:
    """The graph as a Graphviz digraph, nodes then edges in the graph's order."""
    lines = [
        f"digraph {dot_quote(graph.title)} {{",
        f"  rankdir={graph.direction};",
        f'  node [shape=box, style="rounded,filled", fillcolor="{DEFAULT_FILL}", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    names = dot_names(graph.nodes)
    lines.extend(_dot_node(node, names[node.id]) for node in graph.nodes)
    lines.extend(_dot_edge(edge, names) for edge in graph.edges)
    lines.append("}")
    return "\n".join(lines) + "\n"


# -- SVG ----------------------------------------------------------------------------------------
def _x(text: str) -> str:
    """Text for an XML element or a double-quoted attribute."""
    # line breaks and tabs as character references: an attribute value would turn them into spaces
    return escape(_clean(text), {'"': "&quot;", "\n": "&#10;", "\t": "&#9;"})


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _clip(box: Box, toward_x: float, toward_y: float) -> tuple[float, float]:
    """Where the ray from the box centre toward a point leaves the box (a little outside it)."""
    dx, dy = toward_x - box.cx, toward_y - box.cy
    if dx == 0 and dy == 0:
        return box.cx, box.cy
    scale = min(
        (box.width / 2 + 2) / abs(dx) if dx else math.inf,
        (box.height / 2 + 2) / abs(dy) if dy else math.inf,
    )
    return box.cx + dx * scale, box.cy + dy * scale


def _edge_path(a: Box, b: Box, bend: float) -> tuple[str, float, float]:
    """The SVG path of an edge and the point for its label; ``bend`` 0 draws a straight line."""
    if a is b:  # a loop over the top-right corner
        x0, y0 = a.x + a.width * 0.7, a.y - 2
        x1, y1 = a.x + a.width + 2, a.y + a.height * 0.3
        reach = 28 + bend
        path = f"M{_n(x0)},{_n(y0)} C{_n(x0)},{_n(y0 - reach)} {_n(x1 + reach)},{_n(y1)} {_n(x1)},{_n(y1)}"
        return path, x1 + reach * 0.6, y0 - reach * 0.6
    dx, dy = b.cx - a.cx, b.cy - a.cy
    distance = math.hypot(dx, dy) or 1.0
    if bend == 0:
        sx, sy = _clip(a, b.cx, b.cy)
        tx, ty = _clip(b, a.cx, a.cy)
        return f"M{_n(sx)},{_n(sy)} L{_n(tx)},{_n(ty)}", (sx + tx) / 2, (sy + ty) / 2 - 4
    mx, my = (a.cx + b.cx) / 2, (a.cy + b.cy) / 2
    cx, cy = mx - dy / distance * bend, my + dx / distance * bend
    sx, sy = _clip(a, cx, cy)
    tx, ty = _clip(b, cx, cy)
    path = f"M{_n(sx)},{_n(sy)} Q{_n(cx)},{_n(cy)} {_n(tx)},{_n(ty)}"
    return path, 0.25 * sx + 0.5 * cx + 0.25 * tx, 0.25 * sy + 0.5 * cy + 0.25 * ty


def _bends(graph: Graph, placed: Layout) -> list[float]:
    """How far each edge bows out: parallel edges and back edges curve, others run straight."""
    seen: dict[tuple[int, int], int] = {}
    bends: list[float] = []
    for index, edge in enumerate(graph.edges):
        s, t = graph.position(edge.source), graph.position(edge.target)
        pair = (min(s, t), max(s, t))
        nth = seen.get(pair, 0)
        seen[pair] = nth + 1
        a, b = placed.boxes[s], placed.boxes[t]
        curved = index in placed.back_edges or a.layer == b.layer or abs(a.layer - b.layer) > 1 or nth
        bend = 0.0 if not curved else 30.0 + 22.0 * nth
        bends.append(bend)
    return bends


def _text(lines: list[str], cx: float, top: float, css: str) -> str:
    spans = "".join(
        f'<tspan x="{_n(cx)}" y="{_n(top + LINE_HEIGHT * (i + 0.75))}">{_x(line)}</tspan>'
        for i, line in enumerate(lines)
    )
    return f'<text class="{css}" text-anchor="middle">{spans}</text>'


def _svg_node(position: int, node: Node, box: Box) -> str:
    kinds = node.kinds
    css = " ".join(["node", *sorted(k for k in kinds if re.fullmatch(r"[A-Za-z0-9_-]+", k))])
    stroke_width = "2.5" if kinds & {"initial", "root"} else "1"
    dash = ' stroke-dasharray="5,3"' if "shared" in kinds else ""
    fill = _x(node.color or DEFAULT_FILL)
    rect = (
        f'<rect x="{_n(box.x)}" y="{_n(box.y)}" width="{_n(box.width)}" height="{_n(box.height)}" '
        f'rx="6" fill="{fill}" stroke="{DEFAULT_STROKE}" stroke-width="{stroke_width}"{dash}/>'
    )
    if "deleted" in kinds:
        rect += (
            f'<rect x="{_n(box.x + 3)}" y="{_n(box.y + 3)}" width="{_n(box.width - 6)}" '
            f'height="{_n(box.height - 6)}" rx="4" fill="none" stroke="{DEFAULT_STROKE}"/>'
        )
    lines = label_lines(_clean(node.label))
    top = box.cy - LINE_HEIGHT * len(lines) / 2
    body = rect + _text(lines, box.cx, top, "label")
    if node.href and _SAFE_HREF.match(node.href):
        body = f'<a href="{_x(node.href)}" xlink:href="{_x(node.href)}">{body}</a>'
    title = _x(node.tooltip or node.label)
    return f'<g class="{css}" id="n{position}" data-id="{_x(node.id)}"><title>{title}</title>{body}</g>'


def to_svg(graph: Graph) -> str:
    """The graph as a standalone SVG document (laid out by ``dot`` when installed, else by
    ``lsm.graph.layout``)."""
    drawn = dot_layout(graph, _clean)
    if drawn is not None:
        boxes, width, height = drawn.boxes, drawn.width, drawn.height
        routes = list(drawn.edges)
        engine = "graphviz"
    else:
        placed = layout(graph)
        boxes, width, height = placed.boxes, placed.width, placed.height
        routes = [
            _edge_path(boxes[graph.position(e.source)], boxes[graph.position(e.target)], bend)
            for e, bend in zip(graph.edges, _bends(graph, placed), strict=True)
        ]
        engine = "builtin"
    colours = sorted({edge.color for edge in graph.edges if edge.color} | {DEFAULT_STROKE})
    marker_of = {colour: f"arrow{i}" for i, colour in enumerate(colours)}
    markers = "".join(
        f'<marker id="{marker}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{_x(colour)}"/></marker>'
        for colour, marker in marker_of.items()
    )
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        f'class="lsm-graph" width="{_n(width)}" height="{_n(height)}" data-layout="{engine}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" role="img" aria-label="{_x(graph.title)}">',
        f"<title>{_x(graph.title)}</title>",
        "<style>text{font-family:Helvetica,Arial,sans-serif;font-size:12px}"
        ".edge text{font-size:10px;paint-order:stroke;stroke:#fff;stroke-width:3px}</style>",
        f"<defs>{markers}</defs>",
        '<g class="edges">',
    ]
    for index, (edge, (path, lx, ly)) in enumerate(zip(graph.edges, routes, strict=True)):
        colour = edge.color or DEFAULT_STROKE
        dash = _DASHES[edge.style]
        stroke = "2.2" if edge.style == "bold" else "1.2"
        tip = f"{edge.source} -> {edge.target}" + (f": {edge.label}" if edge.label else "")
        label = ""
        if edge.label:
            lines = label_lines(_clean(edge.label))
            label = _text(lines, lx, ly - LINE_HEIGHT * len(lines) / 2, "label")
        parts.append(
            f'<g class="edge" id="e{index}" data-source="{_x(edge.source)}" data-target="{_x(edge.target)}">'
            f"<title>{_x(tip)}</title>"
            f'<path d="{path}" fill="none" stroke="{_x(colour)}" stroke-width="{stroke}"'
            + (f' stroke-dasharray="{dash}"' if dash else "")
            + f' marker-end="url(#{marker_of[colour]})"/>{label}</g>'
        )
    parts.append('</g><g class="nodes">')
    parts.extend(
        _svg_node(i, node, box) for i, (node, box) in enumerate(zip(graph.nodes, boxes, strict=True))
    )
    parts.append("</g></svg>")
    return "\n".join(parts) + "\n"
