"""Ownership walks over an ``InventoryView``: up to the roots, down through whole trees.

Why a module of its own: the owner-tree selector, the default ``roots()`` of every selector and
the bundled selectors all need the same two walks, with the same error rules, and both must be
batched per tree level (one ``IN`` query per level, not one query per instance) so that a
partial compile costs what the touched trees cost.

Error rules (a corrupt inventory must stop the compile, naming the ids, never loop or guess):

* an owner chain that comes back to itself is a cycle: ``SelectorError`` naming the ids in it;
* an ``owner_id`` that is not in the inventory is a missing owner: ``SelectorError`` naming both.

Terminated (deleted) instances are walked like any other; callers decide what to return.
"""

from __future__ import annotations

from collections.abc import Iterable

from lsm.errors import SelectorError
from lsm.selection.view import InstanceRecord, InventoryView


def ownership_roots(view: InventoryView, instance_ids: Iterable[str]) -> dict[str, str]:
    """``{instance id: root id}`` for every id in the inventory (unknown ids are left out).

    Fetches one level of owners per query, then follows each chain through the cache.
    """
    ids = list(dict.fromkeys(instance_ids))
    present = _fetch_chains(view, ids)
    known: dict[str, str] = {}  # every id on a walked chain -> its root
    return {start: _root_of(view, start, known) for start in ids if start in present}


def prefetch_trees(view: InventoryView, instance_ids: Iterable[str]) -> None:
    """Fetch the whole ownership trees of ``instance_ids`` into ``view``'s cache: the same
    batched walks as ``ownership_roots`` + ``tree_members``, once for many later selections
    (batched validations, ``InventoryView.fork``).

    A corrupt chain (cycle, missing owner) is not reported here: its ids are only left out,
    and the selection that walks them raises the error for its own request.
    """
    ids = list(dict.fromkeys(instance_ids))
    present = _fetch_chains(view, ids)
    known: dict[str, str] = {}
    roots: dict[str, None] = {}
    for start in ids:
        if start in present:
            try:
                roots[_root_of(view, start, known)] = None
            except SelectorError:
                continue  # raised again, for its own request, by the selection that needs it
    tree_members(view, roots)


def _fetch_chains(view: InventoryView, ids: list[str]) -> dict[str, InstanceRecord]:
    """Fetch every owner chain of ``ids``, one level per query; the present ones among ``ids``."""
    seen: set[str] = set()
    pending = ids
    while pending:
        seen.update(pending)
        records = view.get_many(pending, include_terminated=True)
        pending = sorted(
            {r.owner_id for r in records.values() if r.owner_id is not None and r.owner_id not in seen}
        )
    return view.get_many(ids, include_terminated=True)


def _root_of(view: InventoryView, start: str, known: dict[str, str]) -> str:
    """Follow ``owner_id`` from ``start`` through cached rows; memoise the root on the whole path."""
    path: list[str] = []
    position: dict[str, int] = {}
    current = start
    while True:
        if current in known:
            root = known[current]
            break
        if current in position:
            cycle = path[position[current] :]
            raise SelectorError(
                f"ownership cycle: {' -> '.join([*cycle, current])}", instance_ids=cycle, cycle=cycle
            )
        position[current] = len(path)
        path.append(current)
        record = view.get(current, include_terminated=True)
        assert record is not None  # every id on a path was found by ownership_roots' prefetch
        owner = record.owner_id
        if owner is None:
            root = current
            break
        if view.get(owner, include_terminated=True) is None:
            raise SelectorError(
                f"instance {current} names owner {owner}, which is not in the inventory",
                instance_id=current,
                owner_id=owner,
                instance_ids=[current, owner],
            )
        current = owner
    for member in path:
        known[member] = root
    return root


def tree_members(view: InventoryView, roots: Iterable[str]) -> list[str]:
    """Every instance owned, directly or not, by ``roots`` (roots included, terminated included).

    One children query per tree level whatever the number of trees and bindings: intermediate
    owners (A owns B owns C) and children of several bindings come out of the same index.
    """
    level = list(dict.fromkeys(roots))
    members: dict[str, None] = dict.fromkeys(level)
    while level:
        children = view.children_many(level, include_terminated=True)
        level = [c for kids in children.values() for c in kids if c not in members]
        members.update(dict.fromkeys(level))
    return list(members)


__all__ = ["ownership_roots", "prefetch_trees", "tree_members"]
