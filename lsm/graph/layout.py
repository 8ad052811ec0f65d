"""Where each box goes: a small deterministic layered layout, so pictures need no Graphviz binary.

The classic Sugiyama steps, each kept linear or close to it so a graph of a few hundred nodes
lays out in milliseconds:

1. break cycles: a depth-first search in node order marks back edges, which are laid out as if
   reversed (lifecycles have many: ``failed -> creating`` and the like);
2. layers by longest path over the now acyclic graph (Kahn's order);
3. order inside a layer by barycentre, a few sweeps down and up (no dummy nodes: a long edge pulls
   on its far end directly, which is good enough for pictures of this size);
4. coordinates: layers side by side (``LR``) or stacked (``TB``), boxes stacked inside a layer and
   centred. Boxes never overlap by construction: layers are as thick as their thickest box and a
   layer's boxes are placed one after the other.

The same graph always gets the same layout: every choice breaks ties on node order.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsm.graph.model import Graph

CHAR_WIDTH = 7.2
LINE_HEIGHT = 16.0
PAD_X = 12.0
PAD_Y = 9.0
NODE_GAP = 22.0
LAYER_GAP = 90.0
MARGIN = 40.0
#: A label line longer than this is cut in the picture (the tooltip keeps all of it).
MAX_LINE = 48
MAX_LINES = 6
SWEEPS = 4


@dataclass(frozen=True, slots=True)
class Box:
    """A node's rectangle: top-left corner and size, with its layer and rank in the layer."""

    x: float
    y: float
    width: float
    height: float
    layer: int
    order: int

    @property
    def cx(self) -> float:
        return self.x + self.width / 2

    @property
    def cy(self) -> float:
        return self.y + self.height / 2


@dataclass(frozen=True, slots=True)
class Layout:
    """Boxes in node order, the canvas size, and which edges (by index) run against the layers."""

    boxes: tuple[Box, ...]
    width: float
    height: float
    back_edges: frozenset[int]


def label_lines(label: str) -> list[str]:
    """The label as the picture shows it: at most MAX_LINES lines of at most MAX_LINE characters."""
    lines = label.split("\n")
    shown = [line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…" for line in lines[:MAX_LINES]]
    if len(lines) > MAX_LINES:
        shown[-1] = "…"
    return shown


def node_size(label: str) -> tuple[float, float]:
    lines = label_lines(label)
    width = max(len(line) for line in lines) * CHAR_WIDTH + 2 * PAD_X
    return max(width, 40.0), len(lines) * LINE_HEIGHT + 2 * PAD_Y


def _back_edges(count: int, edges: list[tuple[int, int]]) -> set[int]:
    """Edges closing a cycle in an iterative depth-first search in node order (self-loops too)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    for index, (source, target) in enumerate(edges):
        out[source].append((target, index))
    back: set[int] = set()
    state = [0] * count  # 0 new, 1 on the stack, 2 done
    for root in range(count):
        if state[root]:
            continue
        state[root] = 1
        stack: list[tuple[int, int]] = [(root, 0)]
        while stack:
            node, next_child = stack[-1]
            if next_child == len(out[node]):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, next_child + 1)
            target, index = out[node][next_child]
            if state[target] == 1:
                back.add(index)
            elif state[target] == 0:
                state[target] = 1
                stack.append((target, 0))
    return back


def _layers(count: int, forward: list[tuple[int, int]]) -> list[int]:
    """Longest-path layer of every node over the acyclic ``forward`` edges."""
    out: list[list[int]] = [[] for _ in range(count)]
    indegree = [0] * count
    for source, target in forward:
        out[source].append(target)
        indegree[target] += 1
    layer = [0] * count
    ready = [n for n in range(count) if indegree[n] == 0]
    ready.reverse()  # a stack popped in node order
    while ready:
        node = ready.pop()
        for target in out[node]:
            layer[target] = max(layer[target], layer[node] + 1)
            indegree[target] -= 1
            if indegree[target] == 0:
                ready.append(target)
    return layer


def _order(layer: list[int], forward: list[tuple[int, int]]) -> list[list[int]]:
    """Nodes per layer, ordered by barycentre sweeps; ties keep node order."""
    depth = max(layer, default=-1) + 1
    layers: list[list[int]] = [[] for _ in range(depth)]
    for node, number in enumerate(layer):
        layers[number].append(node)
    preds: list[list[int]] = [[] for _ in layer]
    succs: list[list[int]] = [[] for _ in layer]
    for source, target in forward:
        preds[target].append(source)
        succs[source].append(target)
    place = [0.0] * len(layer)

    def settle(nodes: list[int]) -> None:
        middle = (len(nodes) - 1) / 2
        for rank, node in enumerate(nodes):
            place[node] = rank - middle

    for nodes in layers:
        settle(nodes)
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        sequence = range(1, depth) if downward else range(depth - 2, -1, -1)
        for number in sequence:
            nodes = layers[number]
            pulls = preds if downward else succs

            def key(node: int, pulls: list[list[int]] = pulls) -> tuple[float, float]:
                near = pulls[node]
                centre = sum(place[n] for n in near) / len(near) if near else place[node]
                return centre, place[node]

            nodes.sort(key=key)
            settle(nodes)
    return layers


def layout(graph: Graph) -> Layout:
    """Boxes for every node of ``graph``; see the module docstring for the steps."""
    count = len(graph.nodes)
    pairs = [(graph.position(e.source), graph.position(e.target)) for e in graph.edges]
    back = _back_edges(count, pairs)
    forward = [(s, t) if index not in back else (t, s) for index, (s, t) in enumerate(pairs) if s != t]
    layer = _layers(count, forward)
    layers = _order(layer, forward)
    sizes = [node_size(node.label) for node in graph.nodes]
    across_lr = graph.direction == "LR"
    # along: the axis the layers follow; across: the axis a layer's boxes are stacked on
    thickness = [max((sizes[n][0 if across_lr else 1] for n in nodes), default=0.0) for nodes in layers]
    extents = [
        sum(sizes[n][1 if across_lr else 0] for n in nodes) + NODE_GAP * max(len(nodes) - 1, 0)
        for nodes in layers
    ]
    widest = max(extents, default=0.0)
    boxes: list[Box | None] = [None] * count
    along = MARGIN
    for number, nodes in enumerate(layers):
        across = MARGIN + (widest - extents[number]) / 2
        for rank, node in enumerate(nodes):
            width, height = sizes[node]
            if across_lr:
                x, y = along + (thickness[number] - width) / 2, across
                across += height + NODE_GAP
            else:
                x, y = across, along + (thickness[number] - height) / 2
                across += width + NODE_GAP
            boxes[node] = Box(x=x, y=y, width=width, height=height, layer=number, order=rank)
        along += thickness[number] + LAYER_GAP
    length = along - LAYER_GAP + MARGIN if layers else 2 * MARGIN
    breadth = widest + 2 * MARGIN
    placed = tuple(box for box in boxes if box is not None)
    assert len(placed) == count
    width, height = (length, breadth) if across_lr else (breadth, length)
    return Layout(
        boxes=placed, width=max(width, 2 * MARGIN), height=max(height, 2 * MARGIN), back_edges=frozenset(back)
    )
