"""The queries behind the difference of two desired-state versions, and the index each one rides on.

Why they can be cheap: the storage is copy-on-write (``lsm.store.desired_state.tables``). A set revision
or a shared resource row is valid for ``[first_version, superseded_in)``, so what differs
between versions ``low < high`` is exactly what was inserted or closed in ``(low, high]``:

* a set revision seen by ``high`` only has ``low < first_version <= high``
  (``ix_ds_set_revision_read``, a range over the revisions written since ``low``);
* a set revision seen by ``low`` only has ``low < superseded_in <= high``
  (``ix_ds_set_revision_closed``, a range over the revisions closed since ``low``);
* the rows of the sets those name are read by set name (``ix_ds_resource_set``);
* shared rows are versioned one by one: entering through the rows inserted since ``low``
  (``ix_ds_resource_read``), leaving through the shared rows closed since ``low``
  (``ix_ds_resource_set``).

Sets that did not change between the two versions are the same stored rows and are never
read: the cost is the sets written between the versions, not the size of either version.

Nothing here decides what a difference means (``lsm.desired_state.diff`` does) and nothing
here may import ``lsm.desired_state``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, and_, literal_column, or_, select

from lsm.store.batches import chunks
from lsm.store.desired_state.tables import ds_resource, ds_set_revision

#: how the shared set is stored in ``ds_resource.set_name``
SHARED_SET = ""


@dataclass(frozen=True, slots=True)
class RevisionRow:
    """One stored revision of a named set."""

    name: str
    first_version: int
    content_hash: str
    resource_count: int


@dataclass(frozen=True, slots=True)
class ResourceRow:
    """One stored resource row: its set ("" for shared) and its canonical JSON texts."""

    resource_id: str
    set_name: str
    attributes: str
    requires: str


def revisions_between(
    conn: Connection, env_id: str, low: int, high: int
) -> tuple[list[RevisionRow], list[RevisionRow]]:
    """``(only_low, only_high)``: the set revisions seen by exactly one of two versions, ``low < high``.

    A set in both lists changed (or was rewritten with the same content: the caller compares
    the hashes); a set in one list only was added or removed.
    """
    r = ds_set_revision.c
    columns = (r.name, r.first_version, r.content_hash, r.resource_count)
    entering = select(*columns).where(
        r.env_id == env_id,
        r.first_version > low,
        r.first_version <= high,
        or_(r.superseded_in.is_(None), r.superseded_in > high),
        r.first_version > literal_column("0"),  # READ_GUARD: lets ix_ds_set_revision_read serve it
    )
    leaving = select(*columns).where(
        r.env_id == env_id,
        r.superseded_in.is_not(None),  # the predicate of ix_ds_set_revision_closed, stated outright
        r.superseded_in > low,
        r.superseded_in <= high,
        r.first_version <= low,
    )
    return (
        [RevisionRow(*row) for row in conn.execute(leaving)],
        [RevisionRow(*row) for row in conn.execute(entering)],
    )


def set_rows_at(conn: Connection, env_id: str, names: Iterable[str], number: int) -> list[ResourceRow]:
    """The rows of the named sets ``names`` as version ``number`` sees them (``ix_ds_resource_set``)."""
    r = ds_resource.c
    found: list[ResourceRow] = []
    for chunk in chunks(sorted(names)):
        query = select(r.resource_id, r.set_name, r.attributes, r.requires).where(
            r.set_name.in_(chunk),
            r.env_id == env_id,
            r.first_version <= number,
            or_(r.superseded_in.is_(None), r.superseded_in > number),
        )
        found.extend(ResourceRow(*row) for row in conn.execute(query))
    return found


def shared_rows_between(
    conn: Connection, env_id: str, low: int, high: int
) -> tuple[list[ResourceRow], list[ResourceRow]]:
    """``(only_low, only_high)``: the shared rows seen by exactly one of two versions, ``low < high``.

    A resource whose row was rewritten with the same content appears in both; the caller
    compares the texts.
    """
    r = ds_resource.c
    columns = (r.resource_id, r.set_name, r.attributes, r.requires)
    leaving = select(*columns).where(
        r.set_name == SHARED_SET,
        r.env_id == env_id,
        r.superseded_in.is_not(None),
        r.superseded_in > low,
        r.superseded_in <= high,
        r.first_version <= low,
    )
    entering = select(*columns).where(
        r.env_id == env_id,
        and_(r.first_version > low, r.first_version <= high),
        r.first_version > literal_column("0"),  # READ_GUARD: the rows written since low, by index
        r.set_name == SHARED_SET,
        or_(r.superseded_in.is_(None), r.superseded_in > high),
    )
    return (
        [ResourceRow(*row) for row in conn.execute(leaving)],
        [ResourceRow(*row) for row in conn.execute(entering)],
    )


__all__ = [
    "SHARED_SET",
    "ResourceRow",
    "RevisionRow",
    "revisions_between",
    "set_rows_at",
    "shared_rows_between",
]
