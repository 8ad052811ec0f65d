"""The deploy agents' result write: one transaction per batch, fenced to the writer's own claims.

Why SQL Core in batches: a batch's results are state rows by executemany and action rows by one
bulk insert, so the store costs a few statements per batch, not per resource.

Results are *fenced*: written only to rows still ``deploying`` and ``claimed_by`` the owner that
ran them, so a taken-over agent's late results are dropped; a row whose desired hash changed
while it ran becomes ``pending`` for the new hash instead of ``deployed``. A removal that
succeeded drops its row (``lsm.store.deploy.removals.finish``).
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
    insert,
    select,
    text,
    update,
)

from lsm.schemas.deploy import ResourceStatus
from lsm.store import metric_counters
from lsm.store.batches import chunks
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import removals
from lsm.store.deploy.tables import (
    OPEN_STATUSES_SQL,
    lsm_resource_action,
    lsm_resource_require,
    lsm_resource_state,
)

_state = lsm_resource_state
_req = lsm_resource_require

_TS = DateTime(timezone=True)


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
    #: it ran a removal (``lsm.store.deploy.removals``): a success drops its state row
    removal: bool = False


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
    succeeded = [r.resource_id for r in results if r.status == ResourceStatus.DEPLOYED]
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
    wanted = (
        text(OPEN_STATUSES_SQL) & (s.c.status == ResourceStatus.DEPLOYING) & (s.c.claimed_by == owner)
    ) | (s.c.status == ResourceStatus.SKIPPED)
    rows = deploy_claims.lock_rows(conn, env_id, [*ids, *near], wanted)
    own = set(ids)
    return Locked(
        mine=frozenset(
            r.resource_id for r in rows if r.status == ResourceStatus.DEPLOYING and r.resource_id in own
        ),
        skipped={r.resource_id: bool(r.purged) for r in rows if r.status == ResourceStatus.SKIPPED},
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
                status=case((same, bindparam("new_status", type_=String())), else_=ResourceStatus.PENDING),
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
    _unskip(
        conn, env_id, [r.resource_id for r in kept if r.status == ResourceStatus.DEPLOYED], locked.skipped
    )
    # after the un-skipping, which follows the removed resources' edges
    removals.finish(
        conn,
        env_id,
        [(r.resource_id, r.ran_hash) for r in kept if r.removal and r.status == ResourceStatus.DEPLOYED],
    )
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
            .where(
                _state.c.env_id == env_id,
                _state.c.resource_id.in_(part),
                _state.c.status == ResourceStatus.SKIPPED,
            )
            .values(status=ResourceStatus.PENDING, next_attempt_at=None)
        )


__all__ = ["Locked", "Result", "lock_results", "write_results"]
