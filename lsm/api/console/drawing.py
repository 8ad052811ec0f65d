"""The console's drawings: a lifecycle as SVG (states coloured by label, transfers by trigger).

Why here and small: the console only needs an SVG string to embed; the graph layout itself
belongs to ``lsm.graph`` (branch ``diagnose``) once it lands, and this module is the one place
that switches to it.
"""

from __future__ import annotations

from markupsafe import Markup

from lsm.schemas.catalog import LifecycleOut

#: fill colour per state label
LABEL_COLOURS = {
    "info": "#dbeafe",
    "success": "#dcfce7",
    "warning": "#fef9c3",
    "danger": "#fee2e2",
}
#: stroke colour per transfer trigger
TRIGGER_COLOURS = {
    "auto": "#64748b",
    "api_set_state": "#7c3aed",
    "on_update": "#2563eb",
    "on_delete": "#dc2626",
    "resource_based": "#16a34a",
    "create": "#0f766e",
}


def lifecycle_svg(lifecycle: LifecycleOut) -> Markup:
    """A simple layered drawing of ``lifecycle`` (states in breadth-first order from the initial one)."""
    from html import escape

    order: list[str] = []
    names = [s.name for s in lifecycle.states]
    start = [lifecycle.initial_state, *lifecycle.alternative_initial_states]
    frontier = [s for s in start if s in names]
    seen = set(frontier)
    while frontier:
        order.extend(frontier)
        nxt: list[str] = []
        for state in frontier:
            for t in lifecycle.transfers:
                for target in (t.target, t.error):
                    if t.source == state and target and target in names and target not in seen:
                        seen.add(target)
                        nxt.append(target)
        frontier = nxt
    order.extend(n for n in names if n not in seen)
    labels = {s.name: s.label for s in lifecycle.states}
    row_h, width, box_w, box_h = 44, 760, 190, 28
    pos = {name: (20, 10 + i * row_h) for i, name in enumerate(order)}
    height = 20 + len(order) * row_h
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lifecycle" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="lifecycle {escape(lifecycle.name)}">'
    ]
    for i, t in enumerate(lifecycle.transfers):
        if t.source not in pos or t.target not in pos:
            continue
        (x1, y1), (_, y2) = pos[t.source], pos[t.target]
        bend = 230 + (i % 12) * 40
        colour = TRIGGER_COLOURS.get(t.trigger, "#334155")
        sy, ty = y1 + box_h / 2, y2 + box_h / 2
        parts.append(
            f'<path d="M{x1 + box_w},{sy} C{bend},{sy} {bend},{ty} {x1 + box_w},{ty}" fill="none" '
            f'stroke="{colour}" stroke-width="1.5" data-trigger="{escape(t.trigger)}">'
            f"<title>{escape(t.source)} → {escape(t.target)} ({escape(t.trigger)})</title></path>"
        )
    for name in order:
        x, y = pos[name]
        fill = LABEL_COLOURS.get(labels.get(name, "info"), "#f1f5f9")
        parts.append(
            f'<g class="state" data-state="{escape(name)}" data-label="{escape(labels.get(name, ""))}">'
            f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="6" fill="{fill}" stroke="#475569"/>'
            f'<text x="{x + 10}" y="{y + 19}" font-size="13" font-family="sans-serif">'
            f"{escape(name)}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
