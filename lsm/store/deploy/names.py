"""Which deploy agent names have work, and how many agent processes share them.

Why apart from the claim itself (``lsm.store.deploy.claiming``): these reads decide which
lease names a process takes (``lsm.deploy.names``) before anything is claimed; they run outside
the claim's write transaction and cost the open work, not the inventory.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, func, select, text

from lsm.store.deploy.leases import PROCESS_PREFIX
from lsm.store.deploy.tables import OPEN_STATUSES_SQL, lsm_deploy_head, lsm_resource_state
from lsm.store.tables import LeaseRow

_state = lsm_resource_state


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


def planned_environments(conn: Connection) -> list[str]:
    """Environments the deploy planner has seen."""
    return [r[0] for r in conn.execute(select(lsm_deploy_head.c.env_id))]


def planned_versions(conn: Connection) -> dict[str, int]:
    """``{environment: the version its plan is at}`` for every environment the planner has seen."""
    return {
        r[0]: int(r[1])
        for r in conn.execute(select(lsm_deploy_head.c.env_id, lsm_deploy_head.c.planned_version))
    }


def live_processes(conn: Connection, now: datetime) -> int:
    """How many agent processes hold a live presence lease (at least one: the caller's own)."""
    lease = LeaseRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    count = conn.execute(
        select(func.count())
        .select_from(lease)
        .where(lease.c.name.startswith(PROCESS_PREFIX), lease.c.expires_at > now)
    ).scalar_one()
    return max(1, int(count))


__all__ = ["live_processes", "open_names", "planned_environments", "planned_versions"]
