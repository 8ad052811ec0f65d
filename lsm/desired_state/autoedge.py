"""Automatic ``requires`` edges (docs/semantics.md §5, ``autoedge``), worked out when a version is stored.

Why at store time, and here: an edge must be known before the deploy orders anything, and
only the store sees the whole version a resource ends up in (a directory may come from a
shared resource stored by an earlier export). A resource type names the ids it may depend on,
per need and nearest first (``Resource.autoedges``; the compiler carries them on
``ResourceRecord.autoedges``); this module turns the first id of each need that the version
holds into a ``requires`` edge and
lists it in the stored attribute ``auto_requires`` so that the API, the console and the
requires graph can mark it.

An automatic edge is added only where a written one could be, and where it can never make a
later export fail:

* from a resource of a named set: to a resource of the same set in the export, or to a shared
  one (in the export or stored); from a shared resource: to a shared one. (Rule 6 forbids the
  cross-set edges; a shared resource requiring a set's resource would block that set's next
  export that drops it.)
* not when the model wrote an edge between the two, either way, nor when ``meta.autoedge`` is
  ``False``; a candidate that is the resource itself is skipped;
* a partial export that carries a shared resource the version already holds keeps that
  resource's automatic edges as stored: rule 4 compares it with the stored one, and a provider
  that appeared since must not make the same resource "differ";
* never a cycle: every automatic edge is followed back, through the export and the stored rows
  it reaches (keyed reads, only what is reachable), and one that closes a cycle refuses the
  export with an ``ExportRuleViolation`` (rule 6) naming the cycle.

Cost: a partial export reads the stored rows of its candidate ids that are not in it (keyed,
``ix_ds_resource_id``) and of what the cycle check reaches; never the whole inventory. Edges are
computed for the resources an export writes; a resource stored earlier gets an edge to a
provider that appears later when its own set is exported again.

Pure: the store hands in what it fetched (``Fetch``), nothing here queries.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from lsm.desired_state.records import (
    SHARED_NAME,
    EncodedResource,
    ExportRequest,
    ResourceRecord,
    encode_record,
)
from lsm.errors import ExportRuleViolation
from lsm.model.meta import meta_of
from lsm.model.resource import AUTO_REQUIRES
from lsm.store.desired_state.diff import SHARED_SET
from lsm.store.desired_state.rows import StoredResource

#: reads the current stored rows of some ids (those it does not return are not stored)
Fetch = Callable[[set[str]], Mapping[str, StoredResource]]


def wants_autoedges(record: ResourceRecord) -> bool:
    """Whether ``record`` names candidates and did not turn ``autoedge`` off."""
    if not record.autoedges:
        return False
    return "meta" not in record.attributes or meta_of(record.attributes).autoedge


def auto_requires_of(attributes: Mapping[str, object]) -> tuple[str, ...]:
    """The automatic edges a stored resource's attributes list (``()`` when none)."""
    found = attributes.get(AUTO_REQUIRES)
    return tuple(str(rid) for rid in found) if isinstance(found, list | tuple) else ()


class AutoEdges:
    """The automatic edges of one export: which stored rows they need, then the rewritten records."""

    def __init__(self, request: ExportRequest) -> None:
        self.request = request
        self.partial = request.kind == "partial"
        self.complete = request.kind == "full" and not request.incremental
        #: id -> (set, record) of the export (first placement wins, as in ``ExportCheck``)
        self.placed: dict[str, tuple[str, ResourceRecord]] = {}
        for name, records in request.sets.items():
            for record in records:
                self.placed.setdefault(record.id, (name, record))
        for record in request.shared:
            self.placed.setdefault(record.id, (SHARED_SET, record))
        self.wanting = [(name, r) for r_id, (name, r) in self.placed.items() if wants_autoedges(r)]

    @property
    def lookup(self) -> set[str]:
        """Ids whose stored row resolving needs: outside candidates, and (partial) the shared
        resources that may already be stored with their edges. Empty for a complete full export."""
        if self.complete:
            return set()
        ids = {c for _, r in self.wanting for need in r.autoedges for c in need if c not in self.placed}
        if self.partial:
            ids.update(record.id for name, record in self.wanting if name == SHARED_SET)
        return ids

    def resolve(self, stored: Mapping[str, StoredResource]) -> dict[str, ResourceRecord]:
        """Resource id -> its record with the automatic edge added (only those that got one)."""
        retired = set(self.request.retired_shared)
        changed: dict[str, ResourceRecord] = {}
        for name, record in self.wanting:
            if self.partial and name == SHARED_SET:
                row = stored.get(record.id)
                if row is not None and row.set_name == SHARED_SET:
                    kept = auto_requires_of(json.loads(row.attributes_json))
                    if kept:
                        changed[record.id] = _with_edges(record, kept)
                    continue
            found = (self._provider(name, record, need, stored, retired) for need in record.autoedges)
            edges = tuple(sorted({edge for edge in found if edge is not None}))
            if edges:
                changed[record.id] = _with_edges(record, edges)
        return changed

    def _provider(
        self,
        name: str,
        record: ResourceRecord,
        need: tuple[str, ...],
        stored: Mapping[str, StoredResource],
        retired: set[str],
    ) -> str | None:
        """The id of ``need`` the edge goes to: its first one the version holds, if allowed."""
        written = set(record.requires)
        for candidate in need:
            if candidate == record.id:
                continue
            placed = self.placed.get(candidate)
            if placed is not None:
                where, provider = placed
                provider_requires: Iterable[str] = provider.requires
            else:
                row = stored.get(candidate)
                if row is None or row.set_name != SHARED_SET or candidate in retired:
                    continue
                where, provider_requires = SHARED_SET, json.loads(row.requires_json)
            if candidate in written or record.id in provider_requires:
                return None  # the model said how these two relate
            if where == SHARED_SET or (where == name and name != SHARED_SET):
                return candidate
            return None  # the nearest provider is where no edge may go: never skip past it
        return None

    def check_cycles(
        self,
        requires: Mapping[str, tuple[str, ...]],
        auto_of: Mapping[str, tuple[str, ...]],
        fetch: Fetch | None,
    ) -> None:
        """Refuse the export when an automatic edge closes a cycle, naming it.

        ``requires`` are the export's final edges by id, ``auto_of`` the automatic ones;
        ``fetch`` reads stored rows for the ids outside the export that a search reaches
        (``None``: a complete full export, which holds every resource of the version).
        """
        outside: dict[str, tuple[str, ...]] = {}
        for rid in sorted(auto_of):
            for target in auto_of[rid]:
                path = _path(target, rid, requires, outside, fetch)
                if path is None:
                    continue
                cycle = [rid, *path]
                raise ExportRuleViolation(
                    f"the automatic edge {rid} -> {target} would make a requires cycle: "
                    + " -> ".join(cycle),
                    rule=6,
                    resources=sorted(set(cycle)),
                    sets=sorted({_display(self.placed[r][0]) for r in cycle if r in self.placed}),
                    cycle=cycle,
                )


def autoedges_of(request: ExportRequest) -> AutoEdges | None:
    """The export's automatic edges to work out, or ``None`` when no record names a candidate."""
    if not any(r.autoedges for records in (*request.sets.values(), request.shared) for r in records):
        return None
    autoedges = AutoEdges(request)
    return autoedges if autoedges.wanting else None


def substituted(
    sets: dict[str, list[ResourceRecord]], changed: Mapping[str, ResourceRecord]
) -> dict[str, list[ResourceRecord]]:
    return {name: substituted_list(records, changed) for name, records in sets.items()}


def substituted_list(
    records: list[ResourceRecord], changed: Mapping[str, ResourceRecord]
) -> list[ResourceRecord]:
    return [changed.get(r.id, r) for r in records] if changed else records


def auto_of(changed: Mapping[str, ResourceRecord]) -> dict[str, tuple[str, ...]]:
    return {rid: auto_requires_of(record.attributes) for rid, record in changed.items()}


def reencode(
    changed: Mapping[str, ResourceRecord],
    encoded: list[tuple[str, list[EncodedResource]]],
    placement: Mapping[str, str],
    unresolved: dict[str, list[tuple[str, str]]],
) -> None:
    """Put the ``changed`` records in place of their encoded forms in ``encoded`` (set name ->
    resources, in place), and note their new edges that leave the export in ``unresolved`` (so
    the export rules check them like written ones)."""
    for name, resources in encoded:
        for i, res in enumerate(resources):
            record = changed.get(res.id)
            if record is None or placement.get(res.id) != name:
                continue
            resources[i] = encode_record(record)
            for required in record.requires:
                if required not in res.record.requires and required not in placement:
                    unresolved.setdefault(required, []).append((res.id, name))


def requires_map(encoded: Iterable[tuple[str, list[EncodedResource]]]) -> dict[str, tuple[str, ...]]:
    """Resource id -> its requires, over encoded sets (first placement wins)."""
    found: dict[str, tuple[str, ...]] = {}
    for _, resources in encoded:
        for res in resources:
            found.setdefault(res.id, res.record.requires)
    return found


def _with_edges(record: ResourceRecord, edges: tuple[str, ...]) -> ResourceRecord:
    attributes = {**record.attributes, AUTO_REQUIRES: sorted(edges)}
    return replace(record, attributes=attributes, requires=tuple(sorted({*record.requires, *edges})))


def _path(
    start: str,
    goal: str,
    requires: Mapping[str, tuple[str, ...]],
    outside: dict[str, tuple[str, ...]],
    fetch: Fetch | None,
) -> list[str] | None:
    """A path ``start -> ... -> goal`` along ``requires`` (breadth first, stored rows read a
    level at a time), or ``None``."""
    parent: dict[str, str | None] = {start: None}
    level = deque([start])
    while level:
        unknown = {rid for rid in level if rid not in requires and rid not in outside}
        if unknown and fetch is not None:
            rows = fetch(unknown)
            for rid in unknown:
                row = rows.get(rid)
                outside[rid] = tuple(json.loads(row.requires_json)) if row is not None else ()
        following: deque[str] = deque()
        for rid in level:
            for nxt in requires.get(rid, outside.get(rid, ())):
                if nxt in parent:
                    continue
                parent[nxt] = rid
                if nxt == goal:
                    path = [nxt]
                    back: str | None = rid
                    while back is not None:
                        path.append(back)
                        back = parent[back]
                    return path[::-1]
                following.append(nxt)
        level = following
    return None


def _display(name: str) -> str:
    return SHARED_NAME if name == SHARED_SET else name


__all__ = [
    "AutoEdges",
    "Fetch",
    "auto_of",
    "auto_requires_of",
    "autoedges_of",
    "reencode",
    "requires_map",
    "substituted",
    "substituted_list",
    "wants_autoedges",
]
