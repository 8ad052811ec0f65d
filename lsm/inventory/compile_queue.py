"""The SQL of the compile queue: find work, claim it under a lease, renew, release, finish.

Why here: the queue's policy (what may run together, see ``lsm.compiler.queue``) is the
compiler's; how rows are found and changed is the inventory's, the one layer that writes SQL.

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

from sqlalchemy import bindparam, func, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from lsm.inventory.tables import CompileRow
from lsm.schemas.compiles import CompileKind, CompileStatus

QUEUED = CompileStatus.QUEUED.value
RUNNING = CompileStatus.RUNNING.value
ACTIVE = (QUEUED, RUNNING)
EXPORTING = (CompileKind.FULL.value, CompileKind.PARTIAL.value)
VALIDATION = CompileKind.VALIDATION.value


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
    """Environments with queued or running requests, per kind (index-only on ``ix_lsm_compile_active``)."""
    query = (
        sa_select(col(CompileRow.env_id), col(CompileRow.status), col(CompileRow.kind))
        .where(col(CompileRow.status).in_(ACTIVE))
        .distinct()
    )
    found: dict[str, dict[str, bool]] = {}
    for env_id, status, kind in session.execute(query):
        flags = found.setdefault(env_id, {})
        if kind == VALIDATION:
            flags["validations" if status == QUEUED else "running_validations"] = True
        else:
            flags["exporting"] = True  # queued, or running: a dead worker's, to take over
    return [Pending(env_id, **flags) for env_id, flags in found.items()]


def queued_exporting(session: Session, env_id: str, *, limit: int | None = None) -> list[Queued]:
    """Queued exporting requests of ``env_id``, oldest first (``limit``: only the first few)."""
    query = (
        sa_select(col(CompileRow.id), col(CompileRow.kind), col(CompileRow.created_at))
        .where(
            col(CompileRow.env_id) == env_id,
            col(CompileRow.status) == QUEUED,
            col(CompileRow.kind).in_(EXPORTING),
        )
        .order_by(col(CompileRow.created_at).asc(), col(CompileRow.id).asc())
    )
    if limit is not None:
        query = query.limit(limit)
    return [Queued(r[0], CompileKind(r[1]), r[2]) for r in session.execute(query)]


def first_queued_full(session: Session, env_id: str) -> Queued | None:
    query = (
        sa_select(col(CompileRow.id), col(CompileRow.kind), col(CompileRow.created_at))
        .where(
            col(CompileRow.env_id) == env_id,
            col(CompileRow.status) == QUEUED,
            col(CompileRow.kind) == CompileKind.FULL.value,
        )
        .order_by(col(CompileRow.created_at).asc(), col(CompileRow.id).asc())
        .limit(1)
    )
    row = session.execute(query).first()
    return None if row is None else Queued(row[0], CompileKind(row[1]), row[2])


def running_exporting(session: Session, env_id: str) -> list[tuple[str, int]]:
    """Running exporting requests of ``env_id`` with their attempts (called under its compile lock:
    they belong to a worker that died, since a live one would hold the lock)."""
    query = sa_select(col(CompileRow.id), col(CompileRow.attempts)).where(
        col(CompileRow.env_id) == env_id,
        col(CompileRow.status) == RUNNING,
        col(CompileRow.kind).in_(EXPORTING),
    )
    return [(r[0], r[1]) for r in session.execute(query)]


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


def claim(
    session: Session,
    ids: Sequence[str],
    *,
    owner: str,
    expires: datetime,
    now: datetime,
    leader: str | None = None,
) -> None:
    """Mark ``ids`` running under ``owner``'s lease; all but ``leader`` point to it (a batch)."""
    if not ids:
        return
    session.execute(
        update(CompileRow)
        .where(col(CompileRow.id).in_(list(ids)))
        .values(
            status=RUNNING,
            lease_owner=owner,
            lease_expires=expires,
            started_at=now,
            attempts=CompileRow.attempts + 1,
            merged_into=None,
        )
    )
    if leader is not None:
        followers = [i for i in ids if i != leader]
        if followers:
            session.execute(
                update(CompileRow).where(col(CompileRow.id).in_(followers)).values(merged_into=leader)
            )


def kinds(session: Session, ids: Sequence[str]) -> list[tuple[str, str, str]]:
    """``(id, kind, env_id)`` of ``ids`` (a keyed read of three columns)."""
    if not ids:
        return []
    query = sa_select(col(CompileRow.id), col(CompileRow.kind), col(CompileRow.env_id)).where(
        col(CompileRow.id).in_(list(ids))
    )
    return [(r[0], r[1], r[2]) for r in session.execute(query)]


def load(session: Session, ids: Sequence[str]) -> dict[str, CompileRow]:
    if not ids:
        return {}
    rows = session.exec(
        sa_select(CompileRow).where(col(CompileRow.id).in_(list(ids)))  # type: ignore[call-overload]
    )
    return {row.id: row for row in rows.scalars()}


def renew(session: Session, owner: str, ids: Sequence[str], expires: datetime) -> set[str]:
    """Extend ``owner``'s leases on ``ids`` in one statement; the ids it still held.

    One statement per lease token (not per request), rows in id order: a heartbeat over a
    hundred running validations stays one round trip and takes its row locks in a stable order.
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
    return int(result.rowcount)  # type: ignore[attr-defined]


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
    query = update(CompileRow).where(col(CompileRow.id) == row_id, col(CompileRow.status) == RUNNING)
    if owner is not None:
        query = query.where(col(CompileRow.lease_owner) == owner)
    result = session.execute(
        query.values(
            status=status.value,
            finished_at=now,
            report=report,
            desired_state_version=desired_state_version,
            lease_owner=None,
            lease_expires=None,
        )
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Finish:
    """One request's outcome for ``finish_fenced``."""

    row_id: str
    owner: str
    status: CompileStatus
    report: dict[str, Any]
    desired_state_version: int | None = None


_c = CompileRow.__table__.c  # type: ignore[attr-defined]
#: one fenced finish, executed with many parameter sets (one round trip, one statement)
_FINISH_FENCED = (
    update(CompileRow.__table__)  # type: ignore[attr-defined]
    .where(_c.id == bindparam("b_id"), _c.status == RUNNING, _c.lease_owner == bindparam("b_owner"))
    .values(
        status=bindparam("b_status"),
        finished_at=bindparam("b_now"),
        report=bindparam("b_report"),
        desired_state_version=bindparam("b_dsv"),
        lease_owner=None,
        lease_expires=None,
    )
)


def finish_fenced(session: Session, finishes: Sequence[Finish], *, now: datetime) -> bool:
    """Record many outcomes in one ``executemany``; whether EVERY request was still held.

    Why: a round of validations ends a hundred requests, and one UPDATE per request (with a
    savepoint each) cost about a millisecond apiece. When this returns ``False`` some request
    was no longer held by its owner (its lease was taken over): the caller rolls back and
    finishes request by request (``finish``) to learn which.
    """
    if not finishes:
        return True
    params = [
        {
            "b_id": f.row_id,
            "b_owner": f.owner,
            "b_status": f.status.value,
            "b_now": now,
            "b_report": f.report,
            "b_dsv": f.desired_state_version,
        }
        for f in finishes
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
