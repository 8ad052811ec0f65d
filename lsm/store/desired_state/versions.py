"""The desired-state statements on whole versions: headers, the revisions a version uses, retention.

Why beside ``lsm.store.desired_state.statements``: those are the export's keyed statements; these read
version headers (``ds_version``) and delete what no kept version sees. The store
(``lsm.desired_state.store``) opens the transactions and turns rows into its records; the
functions here only run statements on the caller's connection.
"""

from __future__ import annotations

import sqlalchemy as sa

from lsm.store.batches import chunks
from lsm.store.desired_state.diff import SHARED_SET
from lsm.store.desired_state.statements import read_guard, rows_at, valid_at
from lsm.store.desired_state.tables import ds_head, ds_resource, ds_set_revision, ds_version


def latest_version(conn: sa.Connection, env_id: str) -> int | None:
    """The newest version number of ``env_id``, or None before its first export."""
    latest = conn.execute(sa.select(ds_head.c.latest).where(ds_head.c.env_id == env_id)).scalar_one_or_none()
    return latest or None


def version_headers(conn: sa.Connection, env_id: str, *, limit: int, offset: int) -> list[sa.RowMapping]:
    """Version header rows of ``env_id``, newest first."""
    query = (
        sa.select(ds_version)
        .where(ds_version.c.env_id == env_id)
        .order_by(ds_version.c.number.desc())
        .limit(limit)
        .offset(offset)
    )
    return list(conn.execute(query).mappings())


def version_header(conn: sa.Connection, env_id: str, number: int) -> sa.RowMapping | None:
    """The header row of version ``number``, or None when it does not exist (any more)."""
    query = sa.select(ds_version).where(ds_version.c.env_id == env_id, ds_version.c.number == number)
    return conn.execute(query).mappings().one_or_none()


def version_exists(conn: sa.Connection, env_id: str, number: int) -> bool:
    """Whether version ``number`` exists; reads only its key (the header of a full export carries
    every set name in ``sets_replaced``: decoding it costs the version)."""
    query = sa.select(ds_version.c.number).where(ds_version.c.env_id == env_id, ds_version.c.number == number)
    return conn.execute(query).first() is not None


def resource_ids_at(conn: sa.Connection, env_id: str, number: int) -> list[tuple[str, str]]:
    """``(set name, resource id)`` of every resource version ``number`` holds (shared: ``SHARED_SET``)."""
    return [
        (name, rid) for name, rid in conn.execute(rows_at(env_id, number, None, ds_resource.c.resource_id))
    ]


def resources_at(
    conn: sa.Connection, env_id: str, number: int, set_name: str | None
) -> list[tuple[str, str, str, str]]:
    """``(set name, resource id, attributes JSON, requires JSON)`` of the resources version
    ``number`` holds, of one named set or (``set_name`` None) all of them."""
    columns = (ds_resource.c.resource_id, ds_resource.c.attributes, ds_resource.c.requires)
    rows = conn.execute(rows_at(env_id, number, set_name, *columns))
    return [(name, rid, attributes, requires) for name, rid, attributes, requires in rows]


def revisions_at(conn: sa.Connection, env_id: str, number: int) -> dict[str, int]:
    """Set name -> ``first_version`` of the revision version ``number`` uses."""
    query = sa.select(ds_set_revision.c.name, ds_set_revision.c.first_version).where(
        ds_set_revision.c.env_id == env_id,
        valid_at(ds_set_revision, number),
        read_guard(ds_set_revision),
    )
    return {name: first for name, first in conn.execute(query)}


def delete_older_than_kept(conn: sa.Connection, env_id: str, keep: int) -> int:
    """Keep the newest ``keep`` versions of ``env_id`` (``keep`` >= 1); return how many were deleted.

    A row is garbage when no kept version sees it: ``superseded_in <= oldest kept``. Rows are
    deleted through the set index, per dead set name (plus the shared set), never by scanning
    the environment.
    """
    oldest_kept = conn.execute(
        sa.select(ds_version.c.number)
        .where(ds_version.c.env_id == env_id)
        .order_by(ds_version.c.number.desc())
        .limit(1)
        .offset(keep - 1)
    ).scalar_one_or_none()
    if oldest_kept is None:
        return 0
    dead_names = list(
        conn.execute(
            sa.select(ds_set_revision.c.name)
            .where(ds_set_revision.c.env_id == env_id, ds_set_revision.c.superseded_in <= oldest_kept)
            .distinct()
        ).scalars()
    )
    for chunk in chunks([SHARED_SET, *dead_names]):
        conn.execute(
            sa.delete(ds_resource).where(
                ds_resource.c.env_id == env_id,
                ds_resource.c.set_name.in_(chunk),
                ds_resource.c.superseded_in <= oldest_kept,
            )
        )
    conn.execute(
        sa.delete(ds_set_revision).where(
            ds_set_revision.c.env_id == env_id, ds_set_revision.c.superseded_in <= oldest_kept
        )
    )
    deleted = conn.execute(
        sa.delete(ds_version).where(ds_version.c.env_id == env_id, ds_version.c.number < oldest_kept)
    ).rowcount
    return int(deleted)


__all__ = [
    "delete_older_than_kept",
    "latest_version",
    "resource_ids_at",
    "resources_at",
    "revisions_at",
    "version_exists",
    "version_header",
    "version_headers",
]
