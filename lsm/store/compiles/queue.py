"""The SQL of the compile queue: find work, claim it under a lease, renew, release, finish.

Why here: the queue's policy (what may run together, see ``lsm.compiler.queue``) is the
compiler's; how rows are found and changed is the store's, the one layer that writes SQL.

Every statement costs what it claims or touches, never the length of the queue or of the
history: claims select ids and the few columns a decision needs (never the JSON columns of
requests that stay queued), through the ``ix_lsm_compile_queue`` and ``ix_lsm_compile_active``
indexes. Lease writes are *fenced*: renewing, releasing and finishing a request name its
``lease_owner``, so a worker that lost a lease (it hung past the expiry and another worker
took the request over) can no longer change it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, case, func, literal, text, union_all, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from lsm.schemas.compiles import CompileKind, CompileStatus
from lsm.store.batches import aware
from lsm.store.environments.halts import lsm_halt
from lsm.store.leases import owner_gone
from lsm.store.tables import CompileRow

QUEUED = CompileStatus.QUEUED.value
RUNNING = CompileStatus.RUNNING.value
ACTIVE = (QUEUED, RUNNING)
EXPORTING = (CompileKind.FULL.value, CompileKind.PARTIAL.value)
VALIDATION = CompileKind.VALIDATION.value

_t = CompileRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy


@dataclass(frozen=True)
class Queued:
    """The columns a claim decides on."""

    id: str
    kind: CompileKind
    created_at: datetime


@dataclass(frozen=True)
class Pending:
    """What an environment has in the queue: which claims are worth a write transaction."""

    env_id: str
    exporting: bool = False
    validations: bool = False
    running_validations: bool = False


def environments_with_work(session: Session) -> list[Pending]:
    """Environments with queued or running requests, per kind: a loose scan of
    ``ix_lsm_compile_active`` (``_WITH_WORK``), so its cost follows the number of environments
    with work, not the length of the queue. Halted environments are left out."""
    return [
        Pending(
            env_id, exporting=bool(exporting), validations=bool(queued), running_validations=bool(running)
        )
        for env_id, exporting, queued, running in session.connection().execute(_WITH_WORK)
    ]


@dataclass(frozen=True)
class Running:
    """A running exporting request as a claim sees it: who holds it, until when."""

    id: str
    attempts: int
    owner: str | None
    expires: datetime | None

    def gone(self, now: datetime) -> bool:
        """Its holder stopped renewing (the lease expired) or its process is gone (this host)."""
        if self.expires is None or self.owner is None or aware(self.expires) <= now:
            return True
        return owner_gone(self.owner)


@dataclass(frozen=True)
class ExportingState:
    """What an exporting claim decides on, read in one statement (``exporting_state``)."""

    #: running exporting requests (the claim holds the compile lock, so their worker died or
    #: lost its lock connection while it still runs them: ``Running.gone`` tells which)
    running: list[Running]
    #: queued exporting requests, oldest first: all of them, or only the first (``every=False``)
    queued: list[Queued]
    #: the oldest queued full request, if any
    first_full: Queued | None


def _with_work_query() -> Any:
    """Which environments have work, one index seek per environment and question.

    Why not ``SELECT DISTINCT env_id, status, kind``: that reads every entry of the active index,
    one per queued or running request, on every claim of every runner thread. Here a recursive
    query walks the distinct ``env_id`` of each status by seeking past the last one found
    (``min(env_id) ... > previous``), then asks three ``EXISTS`` per environment. Every subquery
    repeats the index's own condition (``status IN ('queued', 'running')``) as literals: SQLite
    uses a partial index only when the query's WHERE clause names its condition.
    """
    table, active = _t.name, f"status IN ('{QUEUED}', '{RUNNING}')"
    exporting = ", ".join(f"'{kind}'" for kind in EXPORTING)

    def walk(name: str, status: str) -> str:
        of_status = f"FROM {table} c WHERE c.{active} AND c.status = '{status}'"
        first = f"SELECT min(c.env_id) {of_status}"
        step = f"SELECT min(c.env_id) {of_status} AND c.env_id > {name}.env_id"
        return (
            f"{name}(env_id) AS (SELECT ({first}) "
            f"UNION ALL SELECT ({step}) FROM {name} WHERE {name}.env_id IS NOT NULL)"
        )

    def has(condition: str) -> str:
        return f"EXISTS (SELECT 1 FROM {table} c WHERE c.{active} AND c.env_id = e.env_id AND {condition})"

    queued_validations = has(f"c.status = '{QUEUED}' AND c.kind = '{VALIDATION}'")
    running_validations = has(f"c.status = '{RUNNING}' AND c.kind = '{VALIDATION}'")
    return text(
        f"WITH RECURSIVE {walk('q', QUEUED)}, {walk('r', RUNNING)} "
        f"SELECT e.env_id, {has(f'c.kind IN ({exporting})')}, {queued_validations}, {running_validations} "
        "FROM (SELECT env_id FROM q WHERE env_id IS NOT NULL "
        "UNION SELECT env_id FROM r WHERE env_id IS NOT NULL) e "
        # a halted environment has no work to offer until it is resumed (``lsm.store.environments.halts``)
        f"WHERE e.env_id NOT IN (SELECT h.env_id FROM {lsm_halt.name} h) ORDER BY e.env_id"
    )


#: asked every time the worker looks for work: built once
_WITH_WORK = _with_work_query()


def _exporting_state_query(*, every: bool) -> Any:
    """Three keyed reads on ``ix_lsm_compile_queue`` as one statement (one round trip)."""
    env = bindparam("b_env", type_=_t.c.env_id.type)
    columns = (_t.c.id, _t.c.kind, _t.c.created_at, _t.c.attempts, _t.c.lease_owner, _t.c.lease_expires)
    oldest = (_t.c.created_at.asc(), _t.c.id.asc())
    running = sa_select(*columns, literal("r").label("part"), literal(0).label("pos")).where(
        _t.c.env_id == env, _t.c.status == RUNNING, _t.c.kind.in_(EXPORTING)
    )
    queued = (
        sa_select(*columns, literal("q").label("part"), func.row_number().over(order_by=oldest).label("pos"))
        .where(_t.c.env_id == env, _t.c.status == QUEUED, _t.c.kind.in_(EXPORTING))
        .order_by(*oldest)
    )
    full = (
        sa_select(*columns, literal("f").label("part"), literal(0).label("pos"))
        .where(_t.c.env_id == env, _t.c.status == QUEUED, _t.c.kind == CompileKind.FULL.value)
        .order_by(*oldest)
        .limit(1)
    )
    parts = [running, queued if every else queued.limit(1), full]
    return union_all(*(sa_select(part.subquery()) for part in parts))


_EXPORTING_STATE = {every: _exporting_state_query(every=every) for every in (False, True)}


def exporting_state(session: Session, env_id: str, *, every: bool) -> ExportingState:
    """The running exporting requests, the queued ones (``every``: all, else the oldest) and
    the oldest queued full one of ``env_id``, in one round trip."""
    running: list[Running] = []
    queued: list[tuple[int, Queued]] = []
    first_full: Queued | None = None
    for row_id, kind, created_at, attempts, owner, expires, part, pos in session.connection().execute(
        _EXPORTING_STATE[every], {"b_env": env_id}
    ):
        if part == "r":
            running.append(Running(row_id, attempts, owner, expires))
        elif part == "q":
            queued.append((pos, Queued(row_id, CompileKind(kind), created_at)))
        else:
            first_full = Queued(row_id, CompileKind(kind), created_at)
    queued.sort(key=lambda item: item[0])
    return ExportingState(running, [q for _, q in queued], first_full)


def queued_validations(session: Session, env_id: str, *, limit: int, skip_locked: bool) -> list[str]:
    """Up to ``limit`` queued validations of ``env_id``, oldest first; rows other workers are
    claiming right now are skipped (PostgreSQL), not waited for."""
    query = (
        sa_select(col(CompileRow.id))
        .where(
            col(CompileRow.env_id) == env_id,
            col(CompileRow.status) == QUEUED,
            col(CompileRow.kind) == VALIDATION,
        )
        .order_by(col(CompileRow.created_at).asc(), col(CompileRow.id).asc())
        .limit(limit)
    )
    if skip_locked:
        query = query.with_for_update(skip_locked=True)
    return [r[0] for r in session.execute(query)]


def expired(
    session: Session, now: datetime, *, kind: str = VALIDATION, skip_locked: bool
) -> list[tuple[str, int]]:
    """Running requests of ``kind`` whose lease expired (their worker died or hung): id, attempts."""
    query = sa_select(col(CompileRow.id), col(CompileRow.attempts)).where(
        col(CompileRow.status) == RUNNING,
        col(CompileRow.kind) == kind,
        col(CompileRow.lease_expires) < now,
    )
    if skip_locked:
        query = query.with_for_update(skip_locked=True)
    return [(r[0], r[1]) for r in session.execute(query)]


#: mark requests running under one lease and return their rows (one round trip): followers of
#: a batch point to its leader, the leader (and every request of a claim without one) to nothing
_CLAIM = (
    update(_t)
    .where(_t.c.id.in_(bindparam("b_ids", expanding=True)))
    .values(
        status=RUNNING,
        lease_owner=bindparam("b_owner"),
        lease_expires=bindparam("b_expires"),
        started_at=bindparam("b_now"),
        attempts=_t.c.attempts + 1,
        merged_into=case((_t.c.id == bindparam("b_leader"), None), else_=bindparam("b_leader")),
    )
    .returning(*_t.c)
)


def claim(
    session: Session,
    ids: Sequence[str],
    *,
    owner: str,
    expires: datetime,
    now: datetime,
    leader: str | None = None,
) -> dict[str, CompileRow]:
    """Mark ``ids`` running under ``owner``'s lease and return their rows (the claimed ones
    only: the JSON columns of requests that stay queued are never read); all but ``leader``
    point to it (a batch)."""
    if not ids:
        return {}
    result = session.connection().execute(
        _CLAIM,
        {"b_ids": list(ids), "b_owner": owner, "b_expires": expires, "b_now": now, "b_leader": leader},
    )
    # ``model_construct``: the row is what the database returned, so nothing needs validating,
    # and a claimed row is a snapshot the worker reads, never added to a session. A table
    # model's ``__init__`` (SQLAlchemy instrumentation per field) was most of a claim's time
    # under a burst; this costs a fraction of it.
    return {row.id: CompileRow.model_construct(**row._mapping) for row in result}


def kinds(session: Session, ids: Sequence[str]) -> list[tuple[str, str, str]]:
    """``(id, kind, env_id)`` of ``ids`` (a keyed read of three columns)."""
    if not ids:
        return []
    query = sa_select(col(CompileRow.id), col(CompileRow.kind), col(CompileRow.env_id)).where(
        col(CompileRow.id).in_(list(ids))
    )
    return [(r[0], r[1], r[2]) for r in session.execute(query)]


def lock_in_order(session: Session, ids: Sequence[str]) -> None:
    """Lock the rows of ``ids`` in id order (PostgreSQL; SQLite has one writer at a time).

    Why: a worker's heartbeat renews the leases of all it runs while its runner threads finish
    batches (a leader and the requests merged into it, a round of validations) and other
    workers take over what expired. Each writes several requests' rows in one transaction;
    taken in statement order, two of them could each hold a row the other waits for. Every
    writer of several rows therefore takes them first, in this one order.
    """
    if not ids or session.connection().dialect.name == "sqlite":
        return
    session.execute(
        sa_select(_t.c.id).where(_t.c.id.in_(sorted(set(ids)))).order_by(_t.c.id).with_for_update()
    )


def renew(session: Session, owner: str, ids: Sequence[str], expires: datetime) -> set[str]:
    """Extend ``owner``'s leases on ``ids`` in one statement; the ids it still held.

    One statement per lease token (not per request): a heartbeat over a hundred running
    validations stays one round trip. The caller locks the rows first (``lock_in_order``).
    """
    if not ids:
        return set()
    result = session.execute(
        update(CompileRow)
        .where(
            col(CompileRow.id).in_(sorted(ids)),
            col(CompileRow.lease_owner) == owner,
            col(CompileRow.status) == RUNNING,
        )
        .values(lease_expires=expires)
        .returning(col(CompileRow.id))
    )
    return {row[0] for row in result}


def release(session: Session, ids: Sequence[str], *, owner: str | None = None) -> int:
    """Put requests back in the queue.

    With ``owner`` (a worker giving back what it holds: a graceful shutdown) the claim does not
    count as an attempt; without (a take-over from a dead worker) it does.
    """
    if not ids:
        return 0
    query = update(CompileRow).where(col(CompileRow.id).in_(list(ids)), col(CompileRow.status) == RUNNING)
    values: dict[str, Any] = {
        "status": QUEUED,
        "lease_owner": None,
        "lease_expires": None,
        "started_at": None,
        "merged_into": None,
    }
    if owner is not None:
        query = query.where(col(CompileRow.lease_owner) == owner)
        values["attempts"] = CompileRow.attempts - 1
    result = session.execute(query.values(**values))
    return int(result.rowcount)  # type: ignore[attr-defined]  # an UPDATE gives a CursorResult, typed as Result


def _finish_statement(*, fenced: bool) -> Any:
    query = update(_t).where(_t.c.id == bindparam("b_id"), _t.c.status == RUNNING)
    if fenced:
        query = query.where(_t.c.lease_owner == bindparam("b_owner"))
    return query.values(
        status=bindparam("b_status"),
        finished_at=bindparam("b_now"),
        report=bindparam("b_report"),
        desired_state_version=bindparam("b_dsv"),
        lease_owner=None,
        lease_expires=None,
    )


#: one request's finish, fenced by its lease owner (True) or not (False); built once
_FINISH = {fenced: _finish_statement(fenced=fenced) for fenced in (True, False)}


def finish(
    session: Session,
    row_id: str,
    *,
    owner: str | None,
    status: CompileStatus,
    now: datetime,
    report: dict[str, Any],
    desired_state_version: int | None,
) -> bool:
    """Record a request's outcome if ``owner`` still holds it (``None``: unfenced); whether it did."""
    params = {
        "b_id": row_id,
        "b_status": status.value,
        "b_now": now,
        "b_report": report,
        "b_dsv": desired_state_version,
    }
    if owner is not None:
        params["b_owner"] = owner
    result = session.connection().execute(_FINISH[owner is not None], params)
    return bool(result.rowcount)


@dataclass(frozen=True)
class Finish:
    """One request's outcome for ``finish_fenced``."""

    row_id: str
    owner: str
    status: CompileStatus
    report: dict[str, Any]
    desired_state_version: int | None = None


#: one fenced finish, executed with many parameter sets (one round trip, one statement)
_FINISH_FENCED = _FINISH[True]


def finish_fenced(session: Session, finishes: Sequence[Finish], *, now: datetime) -> bool:
    """Record many outcomes in one ``executemany``; whether EVERY request was still held.

    Why: a round of validations ends a hundred requests, and one UPDATE per request (with a
    savepoint each) cost about a millisecond apiece. When this returns ``False`` some request
    was no longer held by its owner (its lease was taken over): the caller rolls back and
    finishes request by request (``finish``) to learn which.
    """
    if not finishes:
        return True
    params = [  # in id order, the order every writer of several requests takes their rows in
        {
            "b_id": f.row_id,
            "b_owner": f.owner,
            "b_status": f.status.value,
            "b_now": now,
            "b_report": f.report,
            "b_dsv": f.desired_state_version,
        }
        for f in sorted(finishes, key=lambda f: f.row_id)
    ]
    connection = session.connection()
    result = connection.execute(_FINISH_FENCED, params)
    if not connection.dialect.supports_sane_multi_rowcount:
        return False
    return int(result.rowcount) == len(finishes)


def finish_followers(
    session: Session,
    ids: Sequence[str],
    *,
    owner: str | None,
    status: CompileStatus,
    now: datetime,
    report: dict[str, Any],
    desired_state_version: int | None,
) -> None:
    """Record the same outcome on the requests merged into a leader, in one statement."""
    if not ids:
        return
    query = update(CompileRow).where(col(CompileRow.id).in_(list(ids)), col(CompileRow.status) == RUNNING)
    if owner is not None:
        query = query.where(col(CompileRow.lease_owner) == owner)
    session.execute(
        query.values(
            status=status.value,
            finished_at=now,
            report=report,
            desired_state_version=desired_state_version,
            lease_owner=None,
            lease_expires=None,
        )
    )


def queued_count(session: Session, env_id: str, kind: CompileKind) -> int:
    query = sa_select(func.count()).where(
        col(CompileRow.env_id) == env_id, col(CompileRow.status) == QUEUED, col(CompileRow.kind) == kind.value
    )
    return int(session.execute(query).scalar_one())


def open_validations_since(session: Session, env_id: str, instance_ids: Sequence[str]) -> dict[str, datetime]:
    """``{instance id: when its oldest validation request still queued or running was made}``
    for ``instance_ids`` (those with none are left out); chunked ``IN`` reads on the active rows
    (``ix_lsm_compile_active``)."""
    found: dict[str, datetime] = {}
    ids = sorted(set(instance_ids))
    for start in range(0, len(ids), 500):
        query = (
            sa_select(_t.c.instance_id, func.min(_t.c.created_at))
            .where(
                _t.c.status.in_(ACTIVE),
                _t.c.env_id == env_id,
                _t.c.kind == VALIDATION,
                _t.c.instance_id.in_(ids[start : start + 500]),
            )
            .group_by(_t.c.instance_id)
        )
        for instance_id, made in session.connection().execute(query):
            found[str(instance_id)] = made
    return found
