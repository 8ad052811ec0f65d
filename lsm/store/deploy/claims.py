"""Deploy claims: locking resource-state rows in the one global order, and giving claims back.

Why one order: on PostgreSQL several agent processes, the deploy planner and the periodic
repair write the same ``lsm_resource_state`` rows. Two transactions that lock rows in
different orders can each wait for the other: a deadlock, which PostgreSQL breaks by failing
one of them. Every statement here that waits for row locks takes them through ``lock_rows``:
one environment at a time, in ``resource_id`` order (``ORDER BY ... FOR UPDATE``; the
chunks of a sorted id list are themselves in order), so waits only ever point one way. The
whole order (leases, then state rows, then counters) is in docs/architecture.md. The claim
itself never waits (``SKIP LOCKED``). On SQLite a write transaction is exclusive: there are
no row locks and the same statements run without ``FOR UPDATE``.

Why every release names its owner: a claim (``status = 'deploying'``, ``claimed_by``) is given
back only by the process that holds it, or for a holder known to be dead (its presence lease
expired, or its process gone from this host). A release "of an agent name" without an owner
also took back the rows of a live holder that was writing their results.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Connection, select, text, update
from sqlalchemy.exc import DBAPIError

from lsm.schemas.deploy import ResourceStatus
from lsm.store.batches import chunks
from lsm.store.deploy.tables import CLAIMED_SQL, OPEN_STATUSES_SQL, lsm_resource_state

log = logging.getLogger(__name__)

_state = lsm_resource_state
T = TypeVar("T")

#: PostgreSQL's SQLSTATEs of a transaction failed for a conflict with another: deadlock detected,
#: serialization failure. Nothing of it was written, so running it again is safe.
CONFLICTS = ("40P01", "40001")
#: tries of ``retry_conflicts`` (the back-off doubles from 50 ms)
TRIES = 5


def conflict(exc: BaseException) -> bool:
    """Whether ``exc`` failed a transaction for a conflict (``CONFLICTS``), not for its content."""
    return isinstance(exc, DBAPIError) and getattr(exc.orig, "sqlstate", None) in CONFLICTS


def retry_conflicts(transaction: Callable[[], T], what: str) -> T:
    """Run ``transaction`` (a whole write transaction), again with back-off when it failed for a
    conflict. Only for transactions that are safe to repeat: rolled back whole, they wrote
    nothing. With the global lock order a deadlock should not happen; each retry is logged (a
    warning that names the deadlock), so tests that read the logs still see one."""
    for attempt in range(1, TRIES + 1):
        try:
            return transaction()
        except DBAPIError as exc:
            if not conflict(exc) or attempt == TRIES:
                raise
            log.warning("%s: deadlock or conflict (try %d of %d), again: %s", what, attempt, TRIES, exc.orig)
            time.sleep(0.05 * 2 ** (attempt - 1) * (1 + random.random()))
    raise AssertionError("unreachable")


def lock_rows(conn: Connection, env_id: str, ids: Iterable[str], *conditions: Any) -> list[Any]:
    """Lock the rows of ``ids`` that meet ``conditions`` in ``resource_id`` order (PostgreSQL);
    returns ``(resource_id, status, claimed_by, purged)`` of each. A row that no longer meets the
    conditions once its lock is granted is not returned (PostgreSQL re-checks them)."""
    s = _state
    out: list[Any] = []
    for part in chunks(sorted(set(ids))):
        query = (
            select(s.c.resource_id, s.c.status, s.c.claimed_by, s.c.purged)
            .where(s.c.env_id == env_id, s.c.resource_id.in_(part), *conditions)
            .order_by(s.c.resource_id)
        )
        if conn.dialect.name == "postgresql":
            query = query.with_for_update(of=s)
        out.extend(conn.execute(query))
    return out


def _give_back(conn: Connection, env_id: str, owner: str, ids: Sequence[str]) -> int:
    """Rows of ``ids`` still claimed by ``owner`` go back to ``pending`` (locked in order first).
    ``owner`` ``""``: rows claimed by nobody known (left by a release before claims had owners)."""
    s = _state
    mine = [
        r.resource_id
        for r in lock_rows(conn, env_id, ids, text(OPEN_STATUSES_SQL), s.c.status == ResourceStatus.DEPLOYING)
        if (r.claimed_by or "") == owner
    ]
    held = s.c.claimed_by == owner if owner else s.c.claimed_by.is_(None)
    for part in chunks(mine):
        conn.execute(
            update(s)
            .where(
                s.c.env_id == env_id, s.c.resource_id.in_(part), s.c.status == ResourceStatus.DEPLOYING, held
            )
            .values(status=ResourceStatus.PENDING, claimed_by=None, claimed_at=None)
        )
    return len(mine)


def release_claims(conn: Connection, env_id: str, owner: str, resource_ids: Sequence[str]) -> int:
    """Give back these claimed rows of ``owner`` (a batch that failed, or was still running at
    shutdown): they become ``pending`` for the next claim. Returns the rows given back."""
    return _give_back(conn, env_id, owner, resource_ids)


def claims_of(conn: Connection, env_id: str, agents: Sequence[str]) -> dict[str, list[str]]:
    """``{owner: [resource_id]}`` of the rows of these agent names left ``deploying``."""
    s = _state
    out: dict[str, list[str]] = {}
    query = select(s.c.claimed_by, s.c.resource_id).where(
        text(OPEN_STATUSES_SQL),
        s.c.env_id == env_id,
        s.c.agent.in_(list(agents)),
        s.c.status == ResourceStatus.DEPLOYING,
    )
    for owner, resource_id in conn.execute(query):
        out.setdefault(owner or "", []).append(resource_id)
    return out


def release_names(conn: Connection, env_id: str, agents: Sequence[str], *, owner: str) -> int:
    """Rows of these agent names claimed by ``owner`` go back to ``pending`` (a shutdown of
    ``owner``, or a take-over from ``owner`` when it is dead)."""
    ids = claims_of(conn, env_id, agents).get(owner, [])
    return _give_back(conn, env_id, owner, ids) if ids else 0


def stale_claims(conn: Connection, before: datetime) -> dict[tuple[str, str], list[str]]:
    """``{(env_id, owner): [resource_id]}`` of claims made before ``before`` (or before claim
    times were kept), through the partial index of claimed rows: the cost is the number of
    claims, not of resources."""
    s = _state
    query = select(s.c.env_id, s.c.claimed_by, s.c.resource_id).where(
        text(CLAIMED_SQL), (s.c.claimed_at < before) | s.c.claimed_at.is_(None)
    )
    out: dict[tuple[str, str], list[str]] = {}
    for env_id, owner, resource_id in conn.execute(query):
        out.setdefault((env_id, owner or ""), []).append(resource_id)
    return out


__all__ = [
    "CONFLICTS",
    "claims_of",
    "conflict",
    "lock_rows",
    "release_claims",
    "release_names",
    "retry_conflicts",
    "stale_claims",
]
