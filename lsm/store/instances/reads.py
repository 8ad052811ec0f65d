"""Keyed reads of instances and their relations for compiles: the statements behind a selection.

Why here: a compile reads the inventory through ``lsm.selection.InventoryView`` (a cache per
compile) and through the compiler's own listings of exporting instances; the statements they
run are the store's business, so the indexes they rely on and the SQLite planner workarounds
sit beside the tables. Every function takes the caller's connection or session, so a compile
reads one snapshot, and returns plain rows (mappings or light ``Row`` tuples), never ORM
objects a caller could write through. Lookups by lists of ids are the caller's chunks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import sqlalchemy as sa
from sqlmodel import Session, col, select

from lsm.store.batches import chunks
from lsm.store.tables import InstanceRefRow, InstanceRow

_INSTANCES: sa.Table = InstanceRow.metadata.tables["lsm_instance"]
_REFS: sa.Table = InstanceRefRow.metadata.tables["lsm_instance_ref"]

#: what points to these ids, on SQLite: given ``env_id = ?`` and a long ``target_id IN`` list its
#: planner walks every relation of the environment through the primary key instead of probing
#: the target index once per id, so the index is named (SQLAlchemy renders no SQLite hints)
_REFS_TO_SQLITE = sa.text(
    "SELECT source_id, attribute, target_id FROM lsm_instance_ref INDEXED BY ix_lsm_instance_ref_target "
    "WHERE env_id = :env AND target_id IN :ids"
).bindparams(sa.bindparam("ids", expanding=True))


def rows_by_id(conn: sa.Connection, ids: Sequence[str]) -> list[sa.RowMapping]:
    """The instance rows of ``ids`` (any environment: the caller checks ``env_id`` on the rows).

    By id alone: SQLite's planner takes ``env_id = ?`` with a long IN list to the
    ``(env_id, owner_id)`` index and reads the whole environment (``repository.ids_in``).
    """
    return list(conn.execute(sa.select(_INSTANCES).where(_INSTANCES.c.id.in_(list(ids)))).mappings())


def rows_of_entity(
    conn: sa.Connection,
    env_id: str,
    entity: str,
    *,
    states: Collection[str] | None = None,
    include_deleted: bool = False,
) -> list[sa.RowMapping]:
    """Every instance row of one entity (optionally in ``states``), by id, through the entity index."""
    stmt = sa.select(_INSTANCES).where(_INSTANCES.c.env_id == env_id, _INSTANCES.c.entity == entity)
    if states is not None:
        stmt = stmt.where(_INSTANCES.c.state.in_(sorted(states)))
    if not include_deleted:
        stmt = stmt.where(_INSTANCES.c.deleted == sa.false())
    return list(conn.execute(stmt.order_by(_INSTANCES.c.id)).mappings())


def rows_owned_by(conn: sa.Connection, env_id: str, owner_ids: Sequence[str]) -> list[sa.RowMapping]:
    """The instance rows (deleted included) whose owner is one of ``owner_ids``."""
    stmt = sa.select(_INSTANCES).where(
        _INSTANCES.c.env_id == env_id, _INSTANCES.c.owner_id.in_(list(owner_ids))
    )
    return list(conn.execute(stmt).mappings())


def relations_from(conn: sa.Connection, env_id: str, source_ids: Sequence[str]) -> list[sa.RowMapping]:
    """The relations (``source_id``, ``attribute``, ``target_id``) whose source is one of ``source_ids``."""
    r = _REFS.c
    stmt = sa.select(r.source_id, r.attribute, r.target_id).where(
        r.env_id == env_id, r.source_id.in_(list(source_ids))
    )
    return list(conn.execute(stmt).mappings())


def relations_to(conn: sa.Connection, env_id: str, target_ids: Sequence[str]) -> list[sa.RowMapping]:
    """The relations whose target is one of ``target_ids`` (through the target index on SQLite too)."""
    r = _REFS.c
    stmt: sa.Executable = sa.select(r.source_id, r.attribute, r.target_id).where(
        r.env_id == env_id, r.target_id.in_(list(target_ids))
    )
    if conn.dialect.name == "sqlite":
        stmt = _REFS_TO_SQLITE.bindparams(env=env_id, ids=list(target_ids))
    return list(conn.execute(stmt).mappings())


def existing_ids(conn: sa.Connection, env_id: str, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` are instances of ``env_id`` (deleted ones included)."""
    found: set[str] = set()
    for chunk in chunks(ids):
        query = sa.select(_INSTANCES.c.id, _INSTANCES.c.env_id).where(_INSTANCES.c.id.in_(chunk))
        found.update(iid for iid, env in conn.execute(query) if env == env_id)  # (``rows_by_id`` says why)
    return found


def export_states(
    conn: sa.Connection, env_id: str, ids: Sequence[str]
) -> dict[str, tuple[str, str, int, bool]]:
    """Instance id -> ``(entity, state, version, deleted)`` for the instances of ``env_id`` among ``ids``.

    Only the columns an incremental full compile compares with its records, by id alone.
    """
    i = _INSTANCES.c
    found: dict[str, tuple[str, str, int, bool]] = {}
    for chunk in chunks(ids):
        query = sa.select(i.id, i.entity, i.state, i.version, i.deleted, i.env_id).where(i.id.in_(chunk))
        for iid, entity, state, version, deleted, row_env in conn.execute(query):
            if row_env == env_id:
                found[iid] = (entity, state, version, deleted)
    return found


def exporting_rows(session: Session, env_id: str, entity: str, states: list[str]) -> list[sa.Row[Any]]:
    """The live instances of ``entity`` in ``states``, only the columns a compile reads, as rows
    (attribute access like the ORM object, at a third of its cost at 100k rows)."""
    if not states:
        return []
    query = sa.select(
        col(InstanceRow.id),
        col(InstanceRow.entity),
        col(InstanceRow.version),
        col(InstanceRow.desired_state_version),
        col(InstanceRow.state),
        col(InstanceRow.candidate_attributes),
        col(InstanceRow.active_attributes),
        col(InstanceRow.rollback_attributes),
    ).where(
        col(InstanceRow.env_id) == env_id,
        col(InstanceRow.entity) == entity,
        col(InstanceRow.state).in_(states),
        col(InstanceRow.deleted).is_(False),
    )
    return list(session.connection().execute(query))


def live_instances(session: Session, env_id: str, entity: str) -> list[InstanceRow]:
    """Every live (not deleted) instance of ``entity``, as rows (a validation compile's inputs)."""
    query = select(InstanceRow).where(
        InstanceRow.env_id == env_id,
        InstanceRow.entity == entity,
        col(InstanceRow.deleted).is_(False),
    )
    return list(session.exec(query))


__all__ = [
    "existing_ids",
    "export_states",
    "exporting_rows",
    "live_instances",
    "relations_from",
    "relations_to",
    "rows_by_id",
    "rows_of_entity",
    "rows_owned_by",
]
