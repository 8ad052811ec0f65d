"""The deploy planner's statements: turn the desired-state versions written since the last plan
into ``lsm_resource_state`` rows, at the cost of what changed.

Why a cursor (``lsm_deploy_head.planned_version`` = p) and the validity intervals of
``ds_resource``: every version after p wrote exactly the rows with ``first_version > p``, and
closed exactly the rows with ``superseded_in > p``. So a plan reads the current rows written
since p (through ``ix_ds_resource_read``, guarded by ``first_version > 0``) and, of the sets that
versions p+1..L replaced or deleted (and the shared set), the rows closed since p (through
``ix_ds_resource_set``): a 1-set change on a 100,000-set base reads one set's rows. Only the
first plan of an environment (p = 0), or one whose versions p+1..L were collected by retention,
reads a whole version.

Hashes are over the stored canonical JSON *text* of attributes and requires (never re-encoded),
so "did this resource change" is a string comparison with the hash last deployed.

Nothing here runs a handler or knows the lifecycle; ``lsm.deploy.planner`` calls it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import (
    Boolean,
    Connection,
    Integer,
    String,
    bindparam,
    case,
    delete,
    insert,
    or_,
    select,
    text,
    update,
)

from lsm.schemas.deploy import ResourceStatus
from lsm.store.batches import chunks
from lsm.store.database import JsonType
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import removals
from lsm.store.deploy.tables import (
    lsm_deploy_head,
    lsm_resource_require,
    lsm_resource_state,
    resource_type_of,
)
from lsm.store.desired_state.tables import READ_GUARD_SQL, ds_head, ds_resource, ds_version
from lsm.store.tables import InstanceResourcesRow, utcnow

T = TypeVar("T")
#: statuses that a plan of an unchanged hash tries again (``pending``, tries reset)
RETRIED = (ResourceStatus.FAILED, ResourceStatus.SKIPPED, ResourceStatus.NOOP_PENDING)

_state = lsm_resource_state
_records = InstanceResourcesRow.metadata.tables["lsm_instance_resources"]
_req = lsm_resource_require


def desired_hash(attributes_text: str, requires_text: str) -> str:
    """The hash of one stored resource's desired attributes and requires (their stored text)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(attributes_text.encode())
    digest.update(b"\0")
    digest.update(requires_text.encode())
    return digest.hexdigest()


@dataclass
class PlanResult:
    """What one plan did: the versions it covered, the sets it touched, and its row counts."""

    env_id: str
    base: int
    version: int
    #: named sets whose rows were written or removed (the lifecycle feedback looks at their instances)
    sets: set[str] = field(default_factory=set)
    rows_read: int = 0
    rows_written: int = 0
    #: resources that left the desired state: of them, removals scheduled and resources orphaned
    removed: int = 0
    removals: int = 0
    orphaned: int = 0
    full: bool = False

    @property
    def planned(self) -> bool:
        return self.version > self.base


def due_environments(conn: Connection) -> list[str]:
    """Environments whose newest desired-state version is not planned yet."""
    query = (
        select(ds_head.c.env_id)
        .select_from(ds_head.outerjoin(lsm_deploy_head, lsm_deploy_head.c.env_id == ds_head.c.env_id))
        .where(
            (lsm_deploy_head.c.planned_version.is_(None))
            | (ds_head.c.latest > lsm_deploy_head.c.planned_version)
        )
    )
    return [row[0] for row in conn.execute(query)]


def _lock_head(conn: Connection, env_id: str) -> int:
    """The planned version of ``env_id``, its head row locked (created at 0 when missing)."""
    query = select(lsm_deploy_head.c.planned_version).where(lsm_deploy_head.c.env_id == env_id)
    found = conn.execute(query.with_for_update()).scalar()
    if found is not None:
        return int(found)
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        conn.execute(
            pg_insert(lsm_deploy_head).values(env_id=env_id, planned_version=0).on_conflict_do_nothing()
        )
        return int(conn.execute(query.with_for_update()).scalar_one())
    conn.execute(insert(lsm_deploy_head).values(env_id=env_id, planned_version=0))
    return 0


def plan(conn: Connection, env_id: str) -> PlanResult:
    """Bring ``env_id``'s resource-state rows to its newest version; call inside ONE write transaction."""
    base = _lock_head(conn, env_id)
    latest = conn.execute(select(ds_head.c.latest).where(ds_head.c.env_id == env_id)).scalar()
    result = PlanResult(env_id, base, base)
    if latest is None or latest <= base:
        return result
    result.version = latest
    versions = list(
        conn.execute(
            select(ds_version.c.number, ds_version.c.sets_replaced, ds_version.c.sets_deleted).where(
                ds_version.c.env_id == env_id, ds_version.c.number > base, ds_version.c.number <= latest
            )
        )
    )
    full = base == 0 or len(versions) < latest - base
    result.full = full
    touched: set[str] = set()
    for _number, replaced, deleted in versions:
        touched.update(replaced or ())
        touched.update(deleted or ())
    # 1. the current rows written since the last plan (all current rows for a full plan)
    # The range term comes BEFORE the guard: SQLite seeks the index on the first lower bound of
    # a column it meets, and ``first_version > 0`` first made it walk every row of the
    # environment (growing with it, for a 1-row answer) instead of seeking to
    # ``first_version > base`` (flat).
    since = [] if full else [ds_resource.c.first_version > base]
    current = select(
        ds_resource.c.resource_id,
        ds_resource.c.set_name,
        ds_resource.c.attributes,
        ds_resource.c.requires,
    ).where(
        ds_resource.c.env_id == env_id,
        *since,
        ds_resource.c.superseded_in.is_(None),
        text(READ_GUARD_SQL),
    )
    rows = sorted(conn.execute(current), key=lambda row: row[0])
    result.rows_read += len(rows)
    written = {row[0] for row in rows}
    touched.update(row[1] for row in rows)
    if full:
        # a full plan reads the environment's state rows once: per chunk of ids, on a table that
        # this very transaction is filling, PostgreSQL without statistics scanned the environment
        # for each chunk (O(n^2) over a first deploy). Locked
        # in the global order (``lsm.store.deploy.claims``): agents write these rows too.
        existing = _existing(env_id).order_by(_state.c.resource_id)
        if conn.dialect.name == "postgresql":
            existing = existing.with_for_update(of=_state)
        known = set(conn.scalars(existing))
        gone = sorted(known - written)
        last: dict[str, tuple[str, str]] = {}
    else:
        # 2. resources that left the desired state, found before anything is written, so that
        #    every row the plan writes or deletes is locked in one pass, in the global order
        #    (with their last desired attributes: what a removal deletes, and its deletion policy)
        last, read = removals.closed_since(conn, env_id, sorted(touched | {""}), base, written)
        result.rows_read += read
        gone = sorted(last)
        known = {r.resource_id for r in deploy_claims.lock_rows(conn, env_id, written | set(gone))}
    result.rows_written += _upsert(conn, env_id, latest, rows, known)
    gone = [rid for rid in gone if rid in known]  # a resource with no state row has nothing to undo
    if full and gone:
        last = removals.last_records(conn, env_id, gone)
    for part in chunks(gone):
        removed_sets = conn.execute(
            select(_state.c.set_name).where(_state.c.env_id == env_id, _state.c.resource_id.in_(part))
        )
        touched.update(r[0] for r in removed_sets)
    # every resource that left is removed from its target, orphaned or dropped (``removals``)
    scheduled = removals.schedule(
        conn, env_id, latest, {rid: last.get(rid) for rid in gone}, utcnow(), desired_hash
    )
    result.removed = len(gone)
    result.removals = len(scheduled.removals)
    result.orphaned = len(scheduled.orphaned)
    # 3. the trees whose instances were compiled since (an unchanged set writes no resource row,
    #    but its instances' desired-state versions moved: the feedback must look at them)
    records = select(_records.c.set_name).where(
        _records.c.env_id == env_id, _records.c.desired_state_version > base
    )
    touched.update(r[0] for r in conn.execute(records.distinct()))
    # 4. the cursor
    conn.execute(
        update(lsm_deploy_head).where(lsm_deploy_head.c.env_id == env_id).values(planned_version=latest)
    )
    result.sets = {name for name in touched if name}
    return result


def _existing(env_id: str) -> Any:
    """The ids of ``env_id``'s state rows: which to insert and which to update (``_update_state``
    works out an existing row's status from the row itself)."""
    return select(_state.c.resource_id).where(_state.c.env_id == env_id)


def _upsert(
    conn: Connection, env_id: str, version: int, rows: Sequence[Any], known: set[str] | None = None
) -> int:
    """Write the state rows and edges of ``rows`` (``ds_resource`` rows); returns rows written.

    ``known``: the ids of the existing state rows among them (every row of the environment for a
    full plan), read and locked by the caller; ``None``: each chunk reads those of its ids."""
    written = 0
    for part in chunks(rows):
        ids = [row[0] for row in part]
        existing = (
            known
            if known is not None
            else set(conn.scalars(_existing(env_id).where(_state.c.resource_id.in_(ids))))
        )
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        edges: list[dict[str, Any]] = []
        for resource_id, set_name, attributes_text, requires_text in part:
            attributes = json.loads(attributes_text)
            requires = json.loads(requires_text)
            new_hash = desired_hash(attributes_text, requires_text)
            values = {
                "agent": str(attributes.get("agent", "")),
                "resource_type": resource_type_of(resource_id),
                "set_name": set_name,
                "purged": bool(attributes.get("purged", False)),
                "requires": requires,
                "version": version,
                "desired_hash": new_hash,
            }
            edges.extend({"env_id": env_id, "required_id": r, "resource_id": resource_id} for r in requires)
            if resource_id not in existing:
                inserts.append(
                    {
                        **values,
                        "resource_id": resource_id,
                        "env_id": env_id,
                        "status": ResourceStatus.PENDING,
                        "attempts": 0,
                    }
                )
                continue
            updates.append({**values, "rid": resource_id})
        if inserts:
            conn.execute(insert(_state), inserts)
        if updates:
            conn.execute(_UPDATE_STATE.where(_state.c.env_id == env_id), updates)
        conn.execute(delete(_req).where(_req.c.env_id == env_id, _req.c.resource_id.in_(ids)))
        if edges:
            conn.execute(insert(_req), edges)
        written += len(part)
    return written


def _update_state() -> Any:
    """The UPDATE of an existing state row under a new version (bound by name, per row).

    Its new status, and whether its tries start over, are worked out in SQL from the row as it
    stands when it is written, never from what the plan read before:

    * ``deploying`` stays: the agent's result is written for the hash it ran, and turns
      ``pending`` when that hash is no longer the desired one;
    * the same hash: ``failed`` / ``skipped`` / ``noop_pending`` get a new try (``pending``),
      anything else keeps its status;
    * a new hash that is the deployed one (and the row did not fail): ``deployed``;
    * otherwise ``pending``, tries starting over.

    Why in SQL: on PostgreSQL an agent may write a result between the plan's read and this
    write. A status computed from the read one overwrote it: a row that had just become
    ``deployed`` went back to ``deploying`` with no holder and stayed there, and its instance
    never left ``update_inprogress`` (the Linux lab test, one run in three). The right-hand
    sides of an UPDATE see the row before it, so ``desired_hash`` here is the old hash.
    """
    s = _state.c
    new_hash = bindparam("desired_hash", type_=String())
    same = s.desired_hash == new_hash
    # ``or_`` of equalities: an ``IN`` list would be an expanding parameter, which executemany refuses
    retried = same & or_(*(s.status == name for name in RETRIED))
    status = case(
        (s.status == ResourceStatus.DEPLOYING, ResourceStatus.DEPLOYING),
        (retried, ResourceStatus.PENDING),
        (same, s.status),
        ((s.deployed_hash == new_hash) & (s.status != ResourceStatus.FAILED), ResourceStatus.DEPLOYED),
        else_=ResourceStatus.PENDING,
    )
    reset = (s.status != ResourceStatus.DEPLOYING) & (retried | ~same)
    return (
        update(_state)
        .where(_state.c.resource_id == bindparam("rid"))
        .values(
            agent=bindparam("agent", type_=String()),
            resource_type=bindparam("resource_type", type_=String()),
            set_name=bindparam("set_name", type_=String()),
            purged=bindparam("purged", type_=Boolean()),
            requires=bindparam("requires", type_=JsonType),
            version=bindparam("version", type_=Integer()),
            desired_hash=new_hash,
            removal=None,  # back in the desired state: a pending removal is cancelled
            status=status,
            attempts=case((reset, 0), else_=s.attempts),
            next_attempt_at=case((reset, None), else_=s.next_attempt_at),
        )
    )


_UPDATE_STATE = _update_state()


def affected_sets(conn: Connection, env_id: str, resource_ids: Iterable[str]) -> set[str]:
    """The named sets of these resources."""
    found: set[str] = set()
    ids = list(resource_ids)
    for part in chunks(ids):
        found.update(
            r[0]
            for r in conn.execute(
                select(_state.c.set_name).where(_state.c.env_id == env_id, _state.c.resource_id.in_(part))
            )
        )
    found.discard("")
    return found


#: a plan that wrote at least this many state rows refreshes the statistics (PostgreSQL)
BULK_ROWS = 1_000


def refresh_statistics(conn: Connection) -> bool:
    """``ANALYZE`` the tables the agents read by key, after a plan that bulk-loaded them.

    Why: right after a first deploy's plan PostgreSQL knows nothing of the new environment's rows
    and estimates an ``IN`` list of a batch's ids as the whole table, so the agent's read of the
    desired attributes by id (``lsm.store.deploy.claiming.desired_records``) scanned all of
    ``ix_ds_resource_set``
    per batch. ANALYZE samples a bounded number of rows, so it costs the same at 1,000 or
    1,000,000 rows; it changes plans only, never results. Not ``lsm_resource_state``: its
    statistics would say "all pending" until autovacuum saw the deploy finish, and the claims
    (a partial index on the open rows under a LIMIT) then planned sequential scans, several
    times slower for a 1-set change on a large base; its keyed writes are per-row executemany,
    which plan well without statistics. SQLite's plans here do not depend on statistics.
    Called by ``lsm.deploy.planner`` after the plan's commit when it wrote ``BULK_ROWS`` rows or more.
    """
    if conn.dialect.name != "postgresql":
        return False
    conn.exec_driver_sql("ANALYZE lsm_resource_require, ds_resource")
    return True


__all__ = [
    "BULK_ROWS",
    "PlanResult",
    "affected_sets",
    "chunks",
    "desired_hash",
    "due_environments",
    "plan",
    "refresh_statistics",
]
