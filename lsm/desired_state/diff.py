"""The difference between two desired-state versions: by resource set, then by resource.

Why it reads so little: sets that did not change between two versions are the same stored
revision (copy-on-write), so only the revisions written or closed between them are read
(``lsm.store.desired_state.diff``), and only those sets' resources are compared. The cost
is the sets that changed, whatever the size of the versions.

A set rewritten with the same content (changed, then changed back) has another revision but
the same content hash: it is not reported. A resource that moved to another set with the
same attributes and requires is reported as changed, with ``set`` among its changed fields.

Example::

    diff = version_diff(conn, env_id, 3, 7)
    [s.name for s in diff.sets if s.change == "added"]
    [(r.id, r.fields) for r in diff.resources if r.change == "changed"]

Must not: open transactions or check that the versions exist (the store does both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from sqlalchemy import Connection

from lsm.desired_state.records import ResourceRecord, canonical_json
from lsm.store.desired_state.diff import (
    SHARED_SET,
    ResourceRow,
    revisions_between,
    set_rows_at,
    shared_rows_between,
)

Change = Literal["added", "removed", "changed"]


@dataclass(frozen=True, slots=True)
class SetChange:
    """One named set that differs: its resource counts before and after (0 when absent)."""

    name: str
    change: Change
    before_count: int
    after_count: int


@dataclass(frozen=True, slots=True)
class ResourceChange:
    """One resource that differs; ``set_before``/``set_after`` are None for the shared set.

    ``before`` is None for an added resource, ``after`` None for a removed one. ``fields`` names
    what changed: attribute names, ``requires``, ``set``; for an added or removed resource it
    is empty.
    """

    id: str
    change: Change
    set_before: str | None
    set_after: str | None
    before: ResourceRecord | None
    after: ResourceRecord | None
    fields: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VersionDiff:
    """What turns version ``from_version`` into ``to_version`` (either may be the newer)."""

    from_version: int
    to_version: int
    sets: list[SetChange] = field(default_factory=list)
    resources: list[ResourceChange] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.sets and not self.resources


def version_diff(conn: Connection, env_id: str, a: int, b: int) -> VersionDiff:
    """The difference from version ``a`` to version ``b`` of ``env_id``, read through ``conn``."""
    if a == b:
        return VersionDiff(a, b)
    low, high = min(a, b), max(a, b)
    only_low, only_high = revisions_between(conn, env_id, low, high)
    before_revs = {rev.name: rev for rev in only_low}
    after_revs = {rev.name: rev for rev in only_high}
    if a > b:
        before_revs, after_revs = after_revs, before_revs

    sets: list[SetChange] = []
    for name in sorted(before_revs.keys() | after_revs.keys()):
        old, new = before_revs.get(name), after_revs.get(name)
        if old is not None and new is not None and old.content_hash == new.content_hash:
            continue  # rewritten with the same content in between
        change: Change = "changed" if old and new else ("added" if new else "removed")
        sets.append(
            SetChange(name, change, old.resource_count if old else 0, new.resource_count if new else 0)
        )

    names_before = [s.name for s in sets if s.change != "added"]
    names_after = [s.name for s in sets if s.change != "removed"]
    shared_low, shared_high = shared_rows_between(conn, env_id, low, high)
    shared_before, shared_after = (shared_low, shared_high) if a < b else (shared_high, shared_low)
    before = _by_id([*set_rows_at(conn, env_id, names_before, a), *shared_before])
    after = _by_id([*set_rows_at(conn, env_id, names_after, b), *shared_after])
    return VersionDiff(a, b, sets, _resource_changes(before, after))


def _by_id(rows: list[ResourceRow]) -> dict[str, ResourceRow]:
    return {row.resource_id: row for row in rows}


def _set(name: str) -> str | None:
    return None if name == SHARED_SET else name


def _record(row: ResourceRow) -> ResourceRecord:
    return ResourceRecord(row.resource_id, json.loads(row.attributes), tuple(json.loads(row.requires)))


def _resource_changes(before: dict[str, ResourceRow], after: dict[str, ResourceRow]) -> list[ResourceChange]:
    changes: list[ResourceChange] = []
    for rid in sorted(before.keys() | after.keys()):
        old, new = before.get(rid), after.get(rid)
        if old is None:
            assert new is not None
            changes.append(ResourceChange(rid, "added", None, _set(new.set_name), None, _record(new)))
        elif new is None:
            changes.append(ResourceChange(rid, "removed", _set(old.set_name), None, _record(old), None))
        elif (old.set_name, old.attributes, old.requires) != (new.set_name, new.attributes, new.requires):
            old_record, new_record = _record(old), _record(new)
            changes.append(
                ResourceChange(
                    rid,
                    "changed",
                    _set(old.set_name),
                    _set(new.set_name),
                    old_record,
                    new_record,
                    _changed_fields(old, new, old_record, new_record),
                )
            )
    return changes


def _changed_fields(
    old: ResourceRow, new: ResourceRow, old_record: ResourceRecord, new_record: ResourceRecord
) -> tuple[str, ...]:
    """Changed attribute names (sorted), then ``requires`` and ``set`` when they changed."""
    was, now = old_record.attributes, new_record.attributes
    names = sorted(
        name
        for name in was.keys() | now.keys()
        # canonical texts, as stored: 1 and 1.0 and True differ here as they do in the store
        if name not in was or name not in now or canonical_json(was[name]) != canonical_json(now[name])
    )
    if old.requires != new.requires:
        names.append("requires")
    if old.set_name != new.set_name:
        names.append("set")
    return tuple(names)


__all__ = ["Change", "ResourceChange", "SetChange", "VersionDiff", "version_diff"]
