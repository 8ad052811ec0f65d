"""Watched resources: what a watch event does to a resource's row, and which rows to watch.

Why here: a watch event (``lsm.deploy.watch``) must check the resource through the normal
deploy path, so it only turns the resource's row back to ``pending`` (the claim, the executor
and its metaparameters do the rest: a token bucket without a token keeps it ``pending`` until
the next token is due, so a storm of events is one check, and the check reads the target as it
is then, which is the last event's state). The reads cost the watched rows of the names a
process holds, never the environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select, update

from lsm.schemas.deploy import ResourceStatus
from lsm.store.batches import chunks
from lsm.store.deploy.claims import lock_rows
from lsm.store.deploy.leases import lease_name
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.tables import LeaseRow

_state = lsm_resource_state

#: rows a watch event turns to ``pending``: in the desired state, or drift that noop reported
#: (a noop resource is checked again, and reported again or found back in its desired state)
WATCHED = (ResourceStatus.DEPLOYED, ResourceStatus.NOOP_PENDING)


@dataclass(frozen=True)
class Marked:
    """What ``mark_drifted`` did with each id."""

    #: turned to ``pending``: the next claim checks them
    checked: list[str]
    #: ``deploying`` now: the run may have read before the event; mark them again after it
    running: list[str]
    #: no row, or a status a check would not change (pending already, failed, skipped)
    settled: list[str]


def mark_drifted(conn: Connection, env_id: str, resource_ids: Iterable[str]) -> Marked:
    """Turn the watched rows of ``resource_ids`` to ``pending`` (due now) in one write
    transaction; rows locked in the global order first (``lock_rows``)."""
    ids = sorted(set(resource_ids))
    rows = lock_rows(conn, env_id, ids)
    status = {r.resource_id: r.status for r in rows}
    checked = [rid for rid in ids if status.get(rid) in WATCHED]
    running = [rid for rid in ids if status.get(rid) == ResourceStatus.DEPLOYING]
    settled = [rid for rid in ids if rid not in checked and rid not in running]
    for part in chunks(checked):
        conn.execute(
            update(_state)
            .where(_state.c.env_id == env_id, _state.c.resource_id.in_(part), _state.c.status.in_(WATCHED))
            .values(status=ResourceStatus.PENDING, next_attempt_at=None, poll_at=None)
        )
    return Marked(checked, running, settled)


def rows_of(conn: Connection, env_id: str, agents: Sequence[str]) -> dict[str, tuple[str, str, str]]:
    """``{resource_id: (agent, desired_hash, status)}`` of every row of ``agents`` (the watches
    of a process are checked against them: gone, moved to another name, changed); through the
    ``(env_id, agent, resource_id)`` index."""
    out: dict[str, tuple[str, str, str]] = {}
    for part in chunks(sorted(agents)):
        query = select(_state.c.resource_id, _state.c.agent, _state.c.desired_hash, _state.c.status).where(
            _state.c.env_id == env_id, _state.c.agent.in_(part)
        )
        out.update((r[0], (r[1], r[2], r[3])) for r in conn.execute(query))
    return out


def watched_names(conn: Connection, env_id: str) -> set[tuple[str, str]]:
    """``(env_id, agent)`` of the names of ``env_id`` that have watched rows."""
    query = select(_state.c.agent).where(_state.c.env_id == env_id, _state.c.status.in_(WATCHED)).distinct()
    return {(env_id, r[0]) for r in conn.execute(query)}


def unheld(conn: Connection, names: Iterable[tuple[str, str]], now: datetime) -> set[tuple[str, str]]:
    """The names among ``names`` whose lease no process holds now (none, or expired)."""
    wanted = {lease_name(*n): n for n in names}
    lease = LeaseRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    live: set[str] = set()
    for part in chunks(sorted(wanted)):
        query = select(lease.c.name).where(lease.c.name.in_(part), lease.c.expires_at > now)
        live.update(r[0] for r in conn.execute(query))
    return {n for name, n in wanted.items() if name not in live}


__all__ = ["WATCHED", "Marked", "mark_drifted", "rows_of", "unheld", "watched_names"]
