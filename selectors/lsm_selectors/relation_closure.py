"""``RelationClosureSelector``: everything connected to the requested instances, by any relation.

Why: ownership trees are not the only topology. A tunnel between two ports belongs to neither
router, yet both routers' resources may change with it; with the owner-tree selector a model
author would need custom code to pull both trees in. This selector needs none: from the
requested ids it follows every inter-service relation both ways (``lsm_instance_ref``, kept in
step with the attribute sets) plus owner and children, until nothing new is found. So a tunnel
pulls in both ports, their routers and every other port of those routers, and anything those
refer to in turn. Each round is four indexed, batched queries over the new frontier.

The price is that a hub everybody refers to (a shared pool service) connects everything: use it
for models whose relations mean "compile together".

Terminated (deleted) instances: a requested one is expanded (deleting a tunnel must recompile
the routers it connected), one reached on the way is a dead end (an old deleted tunnel does not
tie two live routers together forever). None is selected. ``roots()`` are the ownership roots of
everything requested and selected, terminated roots included.

Enable it per environment with the setting ``selector = "relation_closure"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from lsm.selection import Selector


class RelationClosureSelector(Selector):
    """The fixed point of owner, children and inter-service relations (entry point ``relation_closure``)."""

    name = "relation_closure"

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        view = self.view
        seeds = set(view.get_many(instance_ids, include_terminated=True))
        visited = set(seeds)
        frontier = sorted(seeds)
        while frontier:
            records = view.get_many(frontier, include_terminated=True)
            expand = [i for i in frontier if i in records and (not records[i].deleted or i in seeds)]
            found: set[str] = {o for o in (records[i].owner_id for i in expand) if o is not None}
            for kids in view.children_many(expand).values():
                found.update(kids)
            for relations in view.references_from_many(expand).values():
                found.update(r.target_id for r in relations)
            for relations in view.references_to_many(expand).values():
                found.update(r.source_id for r in relations)
            frontier = sorted(found - visited)
            visited.update(frontier)
        selected: dict[str, list[str]] = {}
        for record in view.get_many(visited).values():  # live only, all cached
            selected.setdefault(record.entity, []).append(record.id)
        return selected


__all__ = ["RelationClosureSelector"]
