"""The deploy agents' claim: take a batch of ready resources of held agent names in one statement.

Why SQL Core in batches: an agent claims up to a few hundred ready resources in one statement,
so the store costs a few statements per batch, not per resource.

Readiness is decided in the claim itself, through ``lsm_resource_require``:

* a resource that is not purged is ready when none of the resources it requires is still open
  (``pending`` / ``deploying``); if one of them is ``failed`` or ``skipped`` it is *skipped*
  instead of run;
* a purged resource is deleted after the purged resources that require it: it is ready when
  none of those is still open (skipped when one of them failed or was skipped).

What a claim gives back, and in which lock order, is ``lsm.store.deploy.claims``; how its
results are written, ``lsm.store.deploy.results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    DateTime,
    Integer,
    String,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal,
    select,
    text,
    update,
)

from lsm.schemas.deploy import BLOCKING_STATUSES, OPEN_STATUSES, ActionKind, ResourceStatus
from lsm.store import metric_counters
from lsm.store.batches import chunks, utc
from lsm.store.deploy import removals
from lsm.store.deploy.tables import (
    OPEN_STATUSES_SQL,
    lsm_resource_action,
    lsm_resource_require,
    lsm_resource_state,
)
from lsm.store.desired_state.tables import ds_resource

_state = lsm_resource_state
_req = lsm_resource_require

_TS = DateTime(timezone=True)

#: statuses of a required resource that still hold its dependants back
WAITING = OPEN_STATUSES
#: statuses of a required resource that skip its dependants
BLOCKING = BLOCKING_STATUSES


@dataclass(frozen=True)
class Claimed:
    """One claimed resource: what the executor needs and what its result write carries."""

    resource_id: str
    agent: str
    set_name: str
    version: int
    desired_hash: str
    purged: bool
    attempts: int
    bucket_tokens: float | None
    bucket_at: datetime | None
    #: it was ``deployed`` and its poll (or repair) was due: a re-check, not a change
    recheck: bool
    #: it left the desired state: the ``(attributes, requires)`` its removal runs with
    #: (``lsm.store.deploy.removals``); ``None``: a resource of the desired state
    removal: tuple[str, str] | None = None


def _claim_statements() -> tuple[Any, Any]:
    """The two claim queries, built once (bound by name: ``env_id``, ``agents``, ``now``, ``lim``)."""
    s = _state
    dep = _state.alias("dep")

    # Each test walks the requirer's edges (``lsm_resource_require`` by its key) and looks the
    # other end's status up by its primary key, as a scalar subquery: the plan is forced whatever
    # the statistics say. A join of ``dep`` and the edges left SQLite (no ANALYZE) free to scan
    # ``dep`` by status (every pending row of the environment) per candidate row: 183 ms per
    # 200-row claim at 10,000 pending resources.
    def status_of(resource_id: Any, *, purged_only: bool) -> Any:
        found = select(dep.c.status).where(dep.c.resource_id == resource_id, dep.c.env_id == _req.c.env_id)
        if purged_only:  # NULL (matches nothing) when that resource is not purged
            found = found.where(dep.c.purged.is_(True))
        return found.scalar_subquery()

    def edges(statuses: tuple[str, ...], *, purged: bool) -> Any:
        if purged:  # purged: the purged resources that require it
            other = status_of(_req.c.resource_id, purged_only=True)
            mine = _req.c.required_id == s.c.resource_id
        else:  # not purged: the resources it requires
            other = status_of(_req.c.required_id, purged_only=False)
            mine = _req.c.resource_id == s.c.resource_id
        return exists(select(literal(1)).where(mine, _req.c.env_id == s.c.env_id, other.in_(statuses)))

    waiting = case(
        (s.c.purged.is_(True), edges(WAITING, purged=True)),
        else_=edges(WAITING, purged=False),
    )
    blocked = case(
        (s.c.purged.is_(True), edges(BLOCKING, purged=True)),
        else_=edges(BLOCKING, purged=False),
    )
    columns = (
        s.c.resource_id,
        s.c.agent,
        s.c.set_name,
        s.c.version,
        s.c.desired_hash,
        s.c.purged,
        s.c.attempts,
        s.c.bucket_tokens,
        s.c.bucket_at,
        s.c.status,
        s.c.removal,
        s.c.requires,
    )
    env = bindparam("env_id", type_=String())
    agents = bindparam("agents", expanding=True, type_=String())
    now = bindparam("now", type_=_TS)
    lim = bindparam("lim", type_=Integer())
    pending = (
        select(*columns, blocked.label("blocked"))
        .where(
            text(OPEN_STATUSES_SQL),
            s.c.env_id == env,
            s.c.agent.in_(agents),
            s.c.status == ResourceStatus.PENDING,
            (s.c.next_attempt_at.is_(None)) | (s.c.next_attempt_at <= now),
            ~waiting,
        )
        .limit(lim)
    )
    # ``status`` is compared through ``coalesce`` so that no index on ``status`` can serve this
    # query: PostgreSQL without statistics for a new environment otherwise chose
    # ``(env_id, status, resource_id)`` and walked every deployed row of the environment per claim
    # (21 ms at 30,000 rows, for no row), where the partial poll index holds only rows with a poll.
    polled = (
        select(*columns, literal(False).label("blocked"))
        .where(
            text("poll_at IS NOT NULL"),
            s.c.env_id == env,
            s.c.poll_at <= now,
            s.c.agent.in_(agents),
            func.coalesce(s.c.status, "") == ResourceStatus.DEPLOYED,
        )
        .limit(lim)
    )
    return pending, polled


_PENDING, _POLLED = _claim_statements()
_LOCKED = (
    _PENDING.with_for_update(skip_locked=True, of=_state),
    _POLLED.with_for_update(skip_locked=True, of=_state),
)


def claim(
    conn: Connection, env_id: str, agents: Sequence[str], owner: str, now: datetime, limit: int
) -> tuple[list[Claimed], list[str]]:
    """Claim up to ``limit`` ready resources of ``agents`` (-> ``deploying``); mark the blocked ones
    ``skipped``. Returns (claimed, skipped ids). Call inside a write transaction."""
    s = _state
    pending, polled = _LOCKED if conn.dialect.name == "postgresql" else (_PENDING, _POLLED)
    params: dict[str, Any] = {"env_id": env_id, "agents": list(agents), "now": now, "lim": limit}
    rows = list(conn.execute(pending, params))
    if len(rows) < limit:
        rows.extend(conn.execute(polled, {**params, "lim": limit - len(rows)}))
    claimed: list[Claimed] = []
    skipped: list[str] = []
    for row in rows:
        if row.blocked:
            skipped.append(row.resource_id)
            continue
        claimed.append(
            Claimed(
                resource_id=row.resource_id,
                agent=row.agent,
                set_name=row.set_name,
                version=row.version,
                desired_hash=row.desired_hash,
                purged=bool(row.purged),
                attempts=row.attempts,
                bucket_tokens=row.bucket_tokens,
                bucket_at=utc(row.bucket_at),
                recheck=row.status == ResourceStatus.DEPLOYED,
                removal=(
                    removals.removal_record(row.removal, row.requires) if row.removal is not None else None
                ),
            )
        )
    if claimed:
        # one keyed UPDATE per row (executemany; pipelined on PostgreSQL): an ``IN`` list of a
        # batch's ids is estimated as the whole table without statistics, and PostgreSQL then
        # scanned the environment through an env_id index for every batch
        conn.execute(
            update(s)
            .where(s.c.env_id == env_id, s.c.resource_id == bindparam("rid"))
            .values(status=ResourceStatus.DEPLOYING, claimed_by=owner, claimed_at=now, poll_at=None),
            [{"rid": c.resource_id} for c in claimed],
        )
    if skipped:
        by_id = {row.resource_id: row for row in rows}
        for part in chunks(skipped):
            conn.execute(
                update(s)
                .where(s.c.env_id == env_id, s.c.resource_id.in_(part))
                .values(
                    status=ResourceStatus.SKIPPED,
                    last_action=ActionKind.SKIP,
                    last_action_at=now,
                    claimed_by=None,
                )
            )
        skip_actions = [
            {
                "env_id": env_id,
                "resource_id": rid,
                "version": by_id[rid].version,
                "action": ActionKind.SKIP,
                "status": ResourceStatus.SKIPPED,
                "changes": {},
                "messages": [
                    {
                        "level": "info",
                        "message": "skipped: a resource it depends on failed or was skipped",
                        "at": now.isoformat(),
                        "data": {},
                    }
                ],
                "started_at": now,
                "duration_ms": 0.0,
                "agent": by_id[rid].agent,
                "dry_run": False,
            }
            for rid in skipped
        ]
        conn.execute(insert(lsm_resource_action), skip_actions)
        metric_counters.count_actions(conn, env_id, skip_actions)
    return claimed, skipped


def desired_records(conn: Connection, env_id: str, claimed: Sequence[Claimed]) -> dict[str, tuple[str, str]]:
    """The ``(attributes, requires)`` text each claimed resource runs with: the current stored
    record, or for a removal the last desired one with ``purged`` set (kept on its state row)."""
    out: dict[str, tuple[str, str]] = {c.resource_id: c.removal for c in claimed if c.removal is not None}
    out.update(stored_records(conn, env_id, [c.resource_id for c in claimed if c.removal is None]))
    return out


def stored_records(conn: Connection, env_id: str, resource_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The current stored ``(attributes, requires)`` text of each of ``resource_ids`` that the
    desired state holds (a compliance check, a watch)."""
    out: dict[str, tuple[str, str]] = {}
    for part in chunks(list(resource_ids)):
        query = select(ds_resource.c.resource_id, ds_resource.c.attributes, ds_resource.c.requires).where(
            ds_resource.c.resource_id.in_(part),
            ds_resource.c.env_id == env_id,
            ds_resource.c.superseded_in.is_(None),
        )
        out.update((r[0], (r[1], r[2])) for r in conn.execute(query))
    return out


__all__ = ["BLOCKING", "WAITING", "Claimed", "claim", "desired_records", "stored_records"]
