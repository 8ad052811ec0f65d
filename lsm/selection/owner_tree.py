"""``OwnerTreeSelector``: the default selector, whole ownership trees of the requested instances.

Why it is the default: resources are grouped in one resource set per ownership tree, named after
the root instance (docs/semantics.md §3). A partial compile must therefore rebuild whole trees:
for each requested id, walk ``relation_to_owner`` up to the root, then collect everything the
root owns, directly or through intermediate owners (router -> port -> subinterface), of every
binding. Both walks are batched per tree level (``lsm.selection.ownership``).

Terminated (deleted) instances take part in the walk: a deleted port still leads to its router's
tree, and a deleted root is still reported by ``roots()`` so that the compiler deletes the set of
a tree that produces nothing. They are never selected. Requested ids that are not in the
inventory at all select nothing.

    selector = OwnerTreeSelector(view, catalog)
    run_selector(selector, [port_id])   # {"router": [r], "port": [p1, p2], ...}
    selector.roots()                    # [r]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsm.catalog import Binding, Catalog
from lsm.selection.ownership import ownership_roots, tree_members
from lsm.selection.selector import PhasedSelector, SelectionResult
from lsm.selection.view import InventoryView


class OwnerTreeSelector(PhasedSelector):
    """Select the whole ownership tree of every requested instance (entry point ``owner_tree``)."""

    name = "owner_tree"

    def __init__(self, view: InventoryView, catalog: Catalog) -> None:
        super().__init__(view, catalog)
        self._tree_roots: dict[str, None] = {}  # insertion-ordered set
        self._selected: dict[str, set[str]] = {}

    def register(self, instance_ids: Sequence[str]) -> None:
        self.add_trees(ownership_roots(self.view, instance_ids).values())

    def add_trees(self, roots: Iterable[str]) -> None:
        """Select the trees of ``roots`` (used by selectors that find roots their own way)."""
        new_roots = [r for r in dict.fromkeys(roots) if r not in self._tree_roots]
        self._tree_roots.update(dict.fromkeys(new_roots))
        members = tree_members(self.view, new_roots)
        for record in self.view.get_many(members).values():  # live ones only; all cached already
            self._selected.setdefault(record.entity, set()).add(record.id)

    def select(self, binding: Binding) -> Iterable[str]:
        return sorted(self._selected.get(binding.name, ()))

    def compute_roots(self, requested_ids: Sequence[str], selected: SelectionResult) -> Iterable[str]:
        return self._tree_roots


__all__ = ["OwnerTreeSelector"]
