"""Why each instance is in a partial compile: the ``selection`` part of every compile report.

Why: when a partial compile touches more (or less) than an operator expected, the question is
"which requested instance brought this one in, and through what?". A selector only answers
with ids, so the reasons are reconstructed from the inventory, cheaply (one batched relation
query per hop over the selected instances only):

* ``owner_tree``: in the same ownership tree as the requested instance (or as an instance it
  brought in through a relation): a set is compiled from its whole tree;
* ``relation``: reached from the requested instance through inter-service relations, within
  the selection (what ``relation_closure`` and selectors like the tunnel's follow); only for a
  selector that follows relations (``BaseSelector.follows_relations``): a filter's picks that
  a relation happens to reach are still its own, ``custom``;
* ``custom``: chosen by the selector for reasons of its own (a filter on state or attribute).
  With one requested instance it is listed under it; with several, under ``"*"`` (the request
  as a whole): a selector runs once for all of them and does not say which one caused what.

``completed`` lists what the engine added to trees the selector returned only in part (see
"Completeness" in ``lsm.selection.selector``). This module reads, never writes.
"""

from __future__ import annotations

from typing import Any

from lsm.selection.ownership import ownership_roots
from lsm.selection.selector import Selection
from lsm.selection.view import InventoryView


def explain_selection(view: InventoryView, selection: Selection, spec: Any) -> dict[str, Any]:
    """``{"selector", "requested", "added", "completed", "roots"}`` for a compile report."""
    selected = set(selection.ids)
    requested = selection.requested
    root_of = ownership_roots(view, [*requested, *selected])
    tree: dict[str, list[str]] = {}
    for instance_id in sorted(selected):
        tree.setdefault(root_of.get(instance_id, instance_id), []).append(instance_id)

    owner: dict[str, tuple[str, str]] = {}  # instance id -> (requested id, reason)

    def claim(origin: str, instance_id: str, reason: str) -> bool:
        if instance_id in owner or instance_id in requested:
            return False
        owner[instance_id] = (origin, reason)
        for mate in tree.get(root_of.get(instance_id, instance_id), []):
            if mate not in owner and mate not in requested:
                owner[mate] = (origin, "owner_tree")
        return True

    frontier: list[tuple[str, str]] = []  # (instance id, requested id it came from)
    for origin in requested:
        for mate in tree.get(root_of.get(origin, origin), []):
            if mate != origin and mate not in owner and mate not in requested:
                owner[mate] = (origin, "owner_tree")
        frontier.append((origin, origin))
    frontier.extend((i, o) for i, (o, _) in list(owner.items()))
    seen = {i for i, _ in frontier}
    # the walk only explains selected instances not seen yet: once every one is (an owner-tree
    # selection always is), its relation reads would find nothing; they were about a tenth of
    # a batched export's time
    while selection.follows_relations and frontier and not selected <= seen:
        ids = [i for i, _ in frontier]
        came_from = dict(frontier)
        outgoing = view.references_from_many(ids)
        incoming = view.references_to_many(ids)
        step: list[tuple[str, str]] = []
        for instance_id in ids:
            origin = came_from[instance_id]
            neighbours = [r.target_id for r in outgoing[instance_id]] + [
                r.source_id for r in incoming[instance_id]
            ]
            for other in neighbours:
                if other in selected and other not in seen:
                    seen.add(other)
                    claim(origin, other, "relation")
                    step.append((other, origin))
                    step.extend((m, origin) for m in tree.get(root_of.get(other, other), []) if m not in seen)
                    seen.update(m for m, _ in step)
        frontier = step

    added: dict[str, dict[str, str]] = {origin: {} for origin in requested}
    fallback = requested[0] if len(requested) == 1 else "*"
    for instance_id in sorted(selected):
        if instance_id in requested:
            continue
        origin, reason = owner.get(instance_id, (fallback, "custom"))
        added.setdefault(origin, {})[instance_id] = reason
    return {
        "selector": spec,
        "requested": requested,
        "added": added,
        "completed": selection.completed,
        "roots": selection.roots,
    }


__all__ = ["explain_selection"]
