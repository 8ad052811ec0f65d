"""The deploy agents' statements: which names have work, claims, result writes, take-over.

Why SQL Core in batches: an agent claims up to a few hundred ready resources in one statement
and writes their results in one transaction (state rows by executemany, action rows by one
bulk insert), so the store costs a few statements per batch, not per resource.

Readiness is decided in the claim itself, through ``lsm_resource_require``:

* a resource that is not purged is ready when none of the resources it requires is still open
  (``pending`` / ``deploying``); if one of them is ``failed`` or ``skipped`` it is *skipped*
  instead of run;
* a purged resource is deleted after the purged resources that require it: it is ready when
  none of those is still open (skipped when one of them failed or was skipped).

Results are *fenced*: written only to rows still ``deploying`` and ``claimed_by`` the owner that
ran them, so a taken-over agent's late results are dropped; a row whose desired hash changed
while it ran becomes ``pending`` for the new hash instead of ``deployed``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Connection,
    DateTime,
    Float,
    Integer,
    String,
    Text,
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
from sqlmodel import Session

from lsm.inventory import deploy_claims, metric_counters
from lsm.inventory.batches import chunks, utc
from lsm.inventory.deploy_tables import (
    OPEN_STATUSES_SQL,
    lsm_deploy_head,
    lsm_resource_action,
    lsm_resource_require,
    lsm_resource_state,
)
from lsm.inventory.desired_state_tables import ds_resource
from lsm.inventory.tables import ScheduleRow

_state = lsm_resource_state
_req = lsm_resource_require

_TS = DateTime(timezone=True)
#: the ``lsm_schedule`` job of the periodic repair (setting ``deploy_repair_interval``)
REPAIR_JOB = "deploy_repair"

#: statuses of a required resource that still hold its dependants back
WAITING = ("pending", "deploying")
#: statuses of a required resource that skip its dependants
BLOCKING = ("failed", "skipped")


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


def open_names(conn: Connection, now: datetime) -> set[tuple[str, str]]:
    """``(env_id, agent)`` with open work: pending/deploying rows, or deployed rows whose poll is due."""
    names = {
        (r[0], r[1])
        for r in conn.execute(
            select(_state.c.env_id, _state.c.agent).where(text(OPEN_STATUSES_SQL)).distinct()
        )
    }
    # per environment, through the partial poll index (env_id, poll_at): a DISTINCT here would
    # walk an index in (env_id, agent) order over every row instead
    for env_id in planned_environments(conn):
        due = select(_state.c.agent).where(
            text("poll_at IS NOT NULL"), _state.c.env_id == env_id, _state.c.poll_at <= now
        )
        names.update((env_id, r[0]) for r in conn.execute(due))
    return names


def _claim_statements() -> tuple[Any, Any]:
    """The two claim queries, built once (bound by name: ``env_id``, ``agents``, ``now``, ``lim``)."""
    s = _state
    dep = _state.alias("dep")

    # Each test walks the requirer's edges (``lsm_resource_require`` by its key) and looks the
    # other end's status up by its primary key, as a scalar subquery: the plan is forced whatever
    # the statistics say. A join of ``dep`` and the edges left SQLite (no ANALYZE) free to scan
    # ``dep`` by status (every pending row of the environment) per candidate row: a claim then
    # cost what is pending, not what it claims.
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
            s.c.status == "pending",
            (s.c.next_attempt_at.is_(None)) | (s.c.next_attempt_at <= now),
            ~waiting,
        )
        .limit(lim)
    )
    # ``status`` is compared through ``coalesce`` so that no index on ``status`` can serve this
    # query: PostgreSQL without statistics for a new environment otherwise chose
    # ``(env_id, status, resource_id)`` and walked every deployed row of the environment per claim
    # (for no row), where the partial poll index holds only rows with a poll.
    polled = (
        select(*columns, literal(False).label("blocked"))
        .where(
            text("poll_at IS NOT NULL"),
            s.c.env_id == env,
            s.c.poll_at <= now,
            s.c.agent.in_(agents),
            func.coalesce(s.c.status, "") == "deployed",
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
                recheck=row.status == "deployed",
            )
        )
    if claimed:
        # one keyed UPDATE per row (executemany; pipelined on PostgreSQL): an ``IN`` list of a
        # batch's ids is estimated as the whole table without statistics, and PostgreSQL then
        # scanned the environment through an env_id index for every batch
        conn.execute(
            update(s)
            .where(s.c.env_id == env_id, s.c.resource_id == bindparam("rid"))
            .values(status="deploying", claimed_by=owner, claimed_at=now, poll_at=None),
            [{"rid": c.resource_id} for c in claimed],
        )
    if skipped:
        by_id = {row.resource_id: row for row in rows}
        for part in chunks(skipped):
            conn.execute(
                update(s)
                .where(s.c.env_id == env_id, s.c.resource_id.in_(part))
                .values(status="skipped", last_action="skip", last_action_at=now, claimed_by=None)
            )
        skip_actions = [
            {
                "env_id": env_id,
                "resource_id": rid,
                "version": by_id[rid].version,
                "action": "skip",
                "status": "skipped",
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


def desired_records(conn: Connection, env_id: str, resource_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The current stored ``(attributes, requires)`` text of these resources."""
    out: dict[str, tuple[str, str]] = {}
    for part in chunks(list(resource_ids)):
        query = select(ds_resource.c.resource_id, ds_resource.c.attributes, ds_resource.c.requires).where(
            ds_resource.c.resource_id.in_(part),
            ds_resource.c.env_id == env_id,
            ds_resource.c.superseded_in.is_(None),
        )
        out.update((r[0], (r[1], r[2])) for r in conn.execute(query))
    return out


@dataclass
class Result:
    """The outcome of one claimed resource, as written to its state row and action log."""

    resource_id: str
    agent: str
    version: int
    #: the hash of the attributes that actually ran (fences a result against a newer version)
    ran_hash: str
    status: str
    attempts: int
    deployed_hash: str | None
    last_error: str | None
    next_attempt_at: datetime | None
    poll_at: datetime | None
    bucket_tokens: float | None
    bucket_at: datetime | None
    #: the action log line; ``None``: nothing ran (a rate limit said wait)
    action: dict[str, Any] | None
    set_name: str = ""
    #: a discovery handler's validated findings ``{resource_id: JSON attributes}``, stored by the
    #: agent with ``lsm.discovery.record_discovery`` in the transaction that writes this result
    discovered: dict[str, Any] | None = None


@dataclass(frozen=True)
class Locked:
    """The rows a batch's result write may change, locked in the global order (PostgreSQL)."""

    #: results that may be written: rows still ``deploying`` and claimed by the writer
    mine: frozenset[str]
    #: skipped rows that a success of the batch may send back to ``pending``
    skipped: dict[str, bool]  # resource_id -> purged


def lock_results(conn: Connection, env_id: str, owner: str, results: Sequence[Result]) -> Locked:
    """Lock, in ONE pass in ``resource_id`` order, every row the result write of ``results``
    may change: the batch's own claims and the skipped rows its successes may un-skip.

    Why one pass before anything is written: the discovery findings, the result rows and the
    un-skipping used to lock rows in three passes, in the batch's order; a planner or another
    agent locking the same rows in another order deadlocked with them."""
    s = _state
    ids = [r.resource_id for r in results]
    succeeded = [r.resource_id for r in results if r.status == "deployed"]
    near: set[str] = set()
    for part in chunks(succeeded):
        near.update(
            r[0]
            for r in conn.execute(
                select(_req.c.resource_id).where(_req.c.env_id == env_id, _req.c.required_id.in_(part))
            )
        )
        near.update(
            r[0]
            for r in conn.execute(
                select(_req.c.required_id).where(_req.c.env_id == env_id, _req.c.resource_id.in_(part))
            )
        )
    wanted = (text(OPEN_STATUSES_SQL) & (s.c.status == "deploying") & (s.c.claimed_by == owner)) | (
        s.c.status == "skipped"
    )
    rows = deploy_claims.lock_rows(conn, env_id, [*ids, *near], wanted)
    own = set(ids)
    return Locked(
        mine=frozenset(r.resource_id for r in rows if r.status == "deploying" and r.resource_id in own),
        skipped={r.resource_id: bool(r.purged) for r in rows if r.status == "skipped"},
    )


def write_results(
    conn: Connection,
    env_id: str,
    owner: str,
    now: datetime,
    results: Sequence[Result],
    locked: Locked | None = None,
) -> set[str]:
    """Write a batch's results in the caller's transaction; returns the ids actually written.

    ``locked``: what ``lock_results`` locked for them in this transaction (locked here when
    ``None``). On a success, dependants that were ``skipped`` go back to ``pending`` (and, for
    a deleted purged resource, the purged resources it required). Then, with every state row
    written, the action log and its counters (the global lock order: state rows first).
    """
    if not results:
        return set()
    s = _state
    if locked is None:
        locked = lock_results(conn, env_id, owner, results)
    mine = set(locked.mine)
    kept = [r for r in results if r.resource_id in mine]
    if kept:
        same = s.c.desired_hash == bindparam("ran_hash", type_=String())
        conn.execute(
            update(s)
            .where(s.c.env_id == env_id, s.c.resource_id == bindparam("rid"))
            .values(
                status=case((same, bindparam("new_status", type_=String())), else_="pending"),
                attempts=case((same, bindparam("new_attempts", type_=Integer())), else_=0),
                deployed_hash=case(
                    (bindparam("success", type_=Integer()) == 1, bindparam("ran_hash", type_=String())),
                    else_=s.c.deployed_hash,
                ),
                last_deployed_version=case(
                    (bindparam("success", type_=Integer()) == 1, bindparam("ran_version", type_=Integer())),
                    else_=s.c.last_deployed_version,
                ),
                last_error=bindparam("new_error", type_=Text()),
                last_action=case(
                    (bindparam("acted", type_=Integer()) == 1, bindparam("new_action", type_=String())),
                    else_=s.c.last_action,
                ),
                last_action_at=case(
                    (bindparam("acted", type_=Integer()) == 1, bindparam("now", type_=_TS)),
                    else_=s.c.last_action_at,
                ),
                next_attempt_at=case((same, bindparam("new_next", type_=_TS)), else_=None),
                poll_at=bindparam("new_poll", type_=_TS),
                bucket_tokens=bindparam("new_tokens", type_=Float()),
                bucket_at=bindparam("new_bucket_at", type_=_TS),
                claimed_by=None,
                claimed_at=None,
            ),
            [
                {
                    "rid": r.resource_id,
                    "ran_hash": r.ran_hash,
                    "ran_version": r.version,
                    "new_status": r.status,
                    "new_attempts": r.attempts,
                    "success": 1 if r.deployed_hash is not None else 0,
                    "new_error": r.last_error,
                    "acted": 1 if r.action is not None else 0,
                    "new_action": r.action["action"] if r.action is not None else None,
                    "now": now,
                    "new_next": r.next_attempt_at,
                    "new_poll": r.poll_at,
                    "new_tokens": r.bucket_tokens,
                    "new_bucket_at": r.bucket_at,
                }
                for r in kept
            ],
        )
    _unskip(conn, env_id, [r.resource_id for r in kept if r.status == "deployed"], locked.skipped)
    actions = [{**r.action, "env_id": env_id} for r in results if r.action is not None]
    if actions:
        conn.execute(insert(lsm_resource_action), actions)
        metric_counters.count_actions(conn, env_id, actions)
    return mine


def _unskip(conn: Connection, env_id: str, succeeded: Sequence[str], skipped: dict[str, bool]) -> None:
    """Skipped rows that ``succeeded`` let through go back to ``pending``: the non-purged
    resources that require one of them, and the purged resources that one of them (a deleted
    purged resource) required. Only rows locked by ``lock_results`` are written."""
    if not succeeded or not skipped:
        return
    done = set(succeeded)
    back: set[str] = set()
    for part in chunks(list(succeeded)):
        for requirer, required in conn.execute(
            select(_req.c.resource_id, _req.c.required_id).where(
                _req.c.env_id == env_id, _req.c.required_id.in_(part) | _req.c.resource_id.in_(part)
            )
        ):
            if requirer in skipped and not skipped[requirer] and required in done:
                back.add(requirer)
            if required in skipped and skipped[required] and requirer in done:
                back.add(required)
    for part in chunks(sorted(back)):
        conn.execute(
            update(_state)
            .where(_state.c.env_id == env_id, _state.c.resource_id.in_(part), _state.c.status == "skipped")
            .values(status="pending", next_attempt_at=None)
        )


def planned_environments(conn: Connection) -> list[str]:
    """Environments the deploy planner has seen."""
    return [r[0] for r in conn.execute(select(lsm_deploy_head.c.env_id))]


def repair_if_due(session: Session, env_id: str, now: datetime, interval: float) -> int:
    """Periodic repair: when ``interval`` seconds passed since the last one, every deployed row of
    ``env_id`` becomes ``pending`` (re-read, drift fixed). The tick is stored (``lsm_schedule``,
    job ``deploy_repair``) and its row locked, so one agent process fires it once; the first look
    only starts the clock. Returns the rows set to pending."""
    if interval <= 0:
        return 0
    row = session.get(ScheduleRow, (env_id, REPAIR_JOB), with_for_update=True)
    if row is None:
        session.add(ScheduleRow(env_id=env_id, job=REPAIR_JOB, last_tick=now))
        return 0
    last = utc(row.last_tick)
    if last is not None and (now - last).total_seconds() < interval:
        return 0
    row.last_tick = now
    session.add(row)
    conn = session.connection()
    # locked in the global order first (an UPDATE of the environment locks in scan order)
    deployed = (
        select(_state.c.resource_id)
        .where(_state.c.env_id == env_id, _state.c.status == "deployed")
        .order_by(_state.c.resource_id)
    )
    if conn.dialect.name == "postgresql":
        deployed = deployed.with_for_update(of=_state)
    ids = [r[0] for r in conn.execute(deployed)]
    for part in chunks(ids):
        conn.execute(
            update(_state)
            .where(_state.c.env_id == env_id, _state.c.resource_id.in_(part), _state.c.status == "deployed")
            .values(status="pending", next_attempt_at=None)
        )
    return len(ids)


__all__ = [
    "BLOCKING",
    "WAITING",
    "Claimed",
    "Locked",
    "Result",
    "claim",
    "desired_records",
    "lock_results",
    "open_names",
    "planned_environments",
    "repair_if_due",
    "utc",
    "write_results",
]
