"""The reads behind ``diagnose`` (``lsm.facade.diagnosis``): compiles ahead, leases, blockers.

Each read is keyed or bounded, never a scan of the inventory: the active compiles of one
environment come from the partial index ``ix_lsm_compile_active`` (a handful of rows), leases
by name, resource rows by primary key, a requires walk one level per query.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import RowMapping
from sqlmodel import Session, col, select

from lsm.schemas.deploy import BLOCKING_STATUSES, ResourceStatus
from lsm.store.deploy import queries as deploy_queries
from lsm.store.tables import CompileRow, LeaseRow

#: how many active compiles of an environment diagnose looks at (the queue batches them anyway)
ACTIVE_LIMIT = 200
#: how deep diagnose follows a chain of skipped resources before it gives up
MAX_DEPTH = 50
BLOCKING = BLOCKING_STATUSES


def active_exporting(session: Session, env_id: str) -> list[CompileRow]:
    """Queued and running full or partial compiles of the environment, oldest first."""
    query = (
        select(CompileRow)
        .where(
            CompileRow.env_id == env_id,
            col(CompileRow.status).in_(["queued", "running"]),
            col(CompileRow.kind).in_(["full", "partial"]),
        )
        .order_by(col(CompileRow.created_at).asc(), col(CompileRow.id).asc())
        .limit(ACTIVE_LIMIT)
    )
    return list(session.exec(query))


def compile_row(session: Session, compile_id: str) -> CompileRow | None:
    return session.get(CompileRow, compile_id)


def leases(session: Session, names: Iterable[str]) -> dict[str, LeaseRow]:
    """Lease rows by name (names nobody holds are left out)."""
    wanted = sorted(set(names))
    if not wanted:
        return {}
    return {row.name: row for row in session.exec(select(LeaseRow).where(col(LeaseRow.name).in_(wanted)))}


def blocking_path(session: Session, env_id: str, start: RowMapping) -> list[RowMapping]:
    """From a skipped resource down its ``requires`` to the failed resource that skipped it.

    The path starts with ``start`` and follows, at each step, the first (sorted) required resource
    that failed or was skipped; it ends at a failed one, at a resource with no blocking
    requirement (a skip whose cause is gone), or after ``MAX_DEPTH`` steps or a cycle. Agents do
    not matter: the rows of every agent of the environment are read by id.
    """
    path = [start]
    seen = {start["resource_id"]}
    current = start
    while current["status"] == ResourceStatus.SKIPPED and len(path) < MAX_DEPTH:
        required = sorted(set(current["requires"] or []) - seen)
        rows = deploy_queries.states_of(session, env_id, required)
        blockers = [rows[r] for r in required if r in rows and rows[r]["status"] in BLOCKING]
        if not blockers:
            break
        # a failed requirement is the root: prefer it over another skipped one
        current = next((b for b in blockers if b["status"] == ResourceStatus.FAILED), blockers[0])
        seen.add(current["resource_id"])
        path.append(current)
    return path
