"""Compliance report statements: create a report, claim its parts, write its rows, read it back.

Why claims like the deploy's: a report runs on the agents (their handlers read the targets),
not in the API process; several agent processes may run, and any may die. A part (one agent
name of one report) is claimed by one process (``owner``, ``claimed_at``) in a write
transaction; its rows are written only while that process still holds it (a fence, checked in
each write); a part whose owner's presence lease expired is claimed again, its rows dropped
first, so a report never counts a resource twice. ``lsm.deploy.compliance`` drives these.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection, RowMapping

from lsm.schemas.compliance import ComplianceOutcome, ReportStatus
from lsm.schemas.deploy import ResourceSelection
from lsm.store.compiles.requests import notify_work
from lsm.store.compliance.tables import (
    OPEN_PART_SQL,
    OPEN_STATUSES,
    lsm_compliance_item,
    lsm_compliance_part,
    lsm_compliance_report,
    lsm_metric_compliance,
)
from lsm.store.deploy.scope import count_by_agent
from lsm.store.deploy.tables import lsm_deploy_head
from lsm.store.metric_counters import upsert_counts

_report, _part, _item = lsm_compliance_report, lsm_compliance_part, lsm_compliance_item
#: parts a claim looks at in one read (the oldest reports first)
CLAIM_WINDOW = 50


@dataclass(frozen=True)
class ClaimedPart:
    """One agent's share of a report, claimed by this process."""

    report_id: str
    env_id: str
    agent: str
    selection: ResourceSelection
    total: int


# -- the operator's request ----------------------------------------------------------------------------
def create_report(conn: Connection, env_id: str, selection: ResourceSelection, now: datetime) -> str:
    """Store a report over ``selection`` with one part per agent name that has selected
    resources, and wake the agents; its id. A selection of nothing is done at once."""
    report_id = str(uuid.uuid4())
    per_agent = count_by_agent(conn, env_id, selection)
    total = sum(per_agent.values())
    status = ReportStatus.QUEUED if total else ReportStatus.DONE
    conn.execute(
        insert(_report),
        [
            {
                "id": report_id,
                "env_id": env_id,
                "selection": selection.model_dump(mode="json"),
                "version": conn.execute(
                    select(lsm_deploy_head.c.planned_version).where(lsm_deploy_head.c.env_id == env_id)
                ).scalar(),
                "status": status.value,
                "total": total,
                "created_at": now,
                "finished_at": None if total else now,
            }
        ],
    )
    if per_agent:
        conn.execute(
            insert(_part),
            [
                {
                    "report_id": report_id,
                    "agent": agent,
                    "env_id": env_id,
                    "status": ReportStatus.QUEUED.value,
                    "total": count,
                    "owner": None,
                    "claimed_at": None,
                }
                for agent, count in sorted(per_agent.items())
            ],
        )
        notify_work(conn, env_id)
    return report_id


def _lock_report(conn: Connection, report_id: str) -> None:
    """Lock the report row (PostgreSQL; a SQLite write transaction is exclusive already): every
    transaction that changes a part takes it first, so parts change one report at a time."""
    if conn.dialect.name == "postgresql":
        conn.execute(select(_report.c.id).where(_report.c.id == report_id).with_for_update())


# -- the agents' side ----------------------------------------------------------------------------------
def open_parts(conn: Connection, agents: Collection[str] | None = None) -> list[RowMapping]:
    """Parts with work left (queued, or running), the oldest reports first, at most
    ``CLAIM_WINDOW``; ``agents``: only the names this process may serve. A read through the
    partial index of open parts: a look when nothing is open costs nothing."""
    query = (
        select(_part, _report.c.selection)
        .join(_report, _report.c.id == _part.c.report_id)
        .where(_part.c.status.in_(OPEN_STATUSES))
        .order_by(_report.c.created_at, _part.c.report_id, _part.c.agent)
        .limit(CLAIM_WINDOW)
    )
    if agents is not None:
        query = query.where(_part.c.agent.in_(sorted(agents)))
    return list(conn.execute(query).mappings())


def take_part(conn: Connection, part: RowMapping, owner: str, now: datetime) -> ClaimedPart | None:
    """Claim ``part`` (a row of ``open_parts``) for ``owner`` if it still stands as it was read
    (None: another process was quicker); the rows a dead owner wrote for it are dropped.
    The report row is locked first, as in ``finish_part``: one lock order, no deadlock."""
    _lock_report(conn, part["report_id"])
    taken = conn.execute(
        update(_part)
        .where(
            _part.c.report_id == part["report_id"],
            _part.c.agent == part["agent"],
            _part.c.status == part["status"],
            _part.c.owner.is_(None) if part["owner"] is None else _part.c.owner == part["owner"],
        )
        .values(status=ReportStatus.RUNNING.value, owner=owner, claimed_at=now)
    ).rowcount
    if not taken:
        return None
    conn.execute(delete(_item).where(_item.c.report_id == part["report_id"], _item.c.agent == part["agent"]))
    conn.execute(
        update(_report)
        .where(_report.c.id == part["report_id"], _report.c.status == ReportStatus.QUEUED.value)
        .values(status=ReportStatus.RUNNING.value)
    )
    return ClaimedPart(
        report_id=part["report_id"],
        env_id=part["env_id"],
        agent=part["agent"],
        selection=ResourceSelection.model_validate(part["selection"]),
        total=part["total"],
    )


def holds(conn: Connection, part: ClaimedPart, owner: str) -> bool:
    """Whether ``owner`` still runs ``part`` (the fence of every write of its rows)."""
    found = conn.execute(
        select(_part.c.owner).where(
            _part.c.report_id == part.report_id,
            _part.c.agent == part.agent,
            _part.c.status == ReportStatus.RUNNING.value,
        )
    ).scalar_one_or_none()
    return found == owner


def write_items(conn: Connection, part: ClaimedPart, owner: str, rows: Sequence[dict[str, Any]]) -> bool:
    """Add checked resources to the report (each a dict of the item columns but ``report_id``
    and ``agent``); False, and nothing written, when ``owner`` no longer holds the part. The
    report row is locked first, as every change to a part does, so a take-over can not commit
    between the fence and the insert."""
    _lock_report(conn, part.report_id)
    if not holds(conn, part, owner):
        return False
    if rows:
        conn.execute(
            insert(_item), [{**row, "report_id": part.report_id, "agent": part.agent} for row in rows]
        )
        counts = Counter((str(row["resource_type"]), str(row["outcome"])) for row in rows)
        upsert_counts(
            conn,
            lsm_metric_compliance,
            ["env_id", "agent", "resource_type", "outcome"],
            [
                {"env_id": part.env_id, "agent": part.agent, "resource_type": t, "outcome": o, "count": n}
                for (t, o), n in counts.items()
            ],
            ["count"],
        )
    return True


def finish_part(
    conn: Connection, part: ClaimedPart, owner: str, now: datetime, *, error: str | None = None
) -> bool:
    """The part is done (``error``: it could not run, and the report fails with that message);
    the report is done when no part has work left. False when ``owner`` lost the part."""
    # the report row first: two parts finishing at once on PostgreSQL each counted the other as
    # still running (neither commit seen) and nobody marked the report done
    _lock_report(conn, part.report_id)
    if not holds(conn, part, owner):
        return False
    status = ReportStatus.DONE if error is None else ReportStatus.FAILED
    conn.execute(
        update(_part)
        .where(_part.c.report_id == part.report_id, _part.c.agent == part.agent)
        .values(status=status.value)
    )
    if error is not None:
        conn.execute(update(_report).where(_report.c.id == part.report_id).values(error=error))
    left = conn.execute(
        select(func.count())
        .select_from(_part)
        .where(
            _part.c.report_id == part.report_id,
            _part.c.status.in_(OPEN_STATUSES),
        )
    ).scalar_one()
    if not left:
        failed = conn.execute(
            select(func.count())
            .select_from(_part)
            .where(_part.c.report_id == part.report_id, _part.c.status == ReportStatus.FAILED.value)
        ).scalar_one()
        conn.execute(
            update(_report)
            .where(_report.c.id == part.report_id)
            .values(status=(ReportStatus.FAILED if failed else ReportStatus.DONE).value, finished_at=now)
        )
    return True


def give_back(conn: Connection, part: ClaimedPart, owner: str) -> int:
    """Shutdown: ``owner``'s part is queued again for another process, its rows dropped."""
    _lock_report(conn, part.report_id)
    changed = conn.execute(
        update(_part)
        .where(
            _part.c.report_id == part.report_id,
            _part.c.agent == part.agent,
            _part.c.owner == owner,
            _part.c.status == ReportStatus.RUNNING.value,
        )
        .values(status=ReportStatus.QUEUED.value, owner=None, claimed_at=None)
    ).rowcount
    if changed:
        conn.execute(delete(_item).where(_item.c.report_id == part.report_id, _item.c.agent == part.agent))
        notify_work(conn, part.env_id)
    return int(changed or 0)


# -- reads ---------------------------------------------------------------------------------------------
def get_report(conn: Connection, env_id: str, report_id: str) -> RowMapping | None:
    return (
        conn.execute(select(_report).where(_report.c.id == report_id, _report.c.env_id == env_id))
        .mappings()
        .first()
    )


def list_reports(conn: Connection, env_id: str, *, limit: int, offset: int = 0) -> list[RowMapping]:
    """The environment's reports, newest first."""
    query = (
        select(_report)
        .where(_report.c.env_id == env_id)
        .order_by(_report.c.created_at.desc(), _report.c.id)
        .limit(limit)
        .offset(offset)
    )
    return list(conn.execute(query).mappings())


def outcome_counts(conn: Connection, report_id: str) -> dict[ComplianceOutcome, int]:
    """The report's checked resources per outcome (one grouped read of its index)."""
    query = (
        select(_item.c.outcome, func.count()).where(_item.c.report_id == report_id).group_by(_item.c.outcome)
    )
    return {ComplianceOutcome(outcome): int(n) for outcome, n in conn.execute(query)}


def items_page(
    conn: Connection,
    report_id: str,
    *,
    outcome: ComplianceOutcome | None = None,
    limit: int,
    offset: int = 0,
) -> list[RowMapping]:
    """A page of the report's rows in id order (``outcome``: only those)."""
    query = select(_item).where(_item.c.report_id == report_id)
    if outcome is not None:
        query = query.where(_item.c.outcome == outcome.value)
    return list(conn.execute(query.order_by(_item.c.resource_id).limit(limit).offset(offset)).mappings())


def metric_rows(conn: Connection) -> tuple[list[tuple[str, str, str, str, int]], list[tuple[str, str, int]]]:
    """What ``/metrics`` shows of compliance: the checked-resource counters ``(env, agent, type,
    outcome, n)`` (a few rows), and parts with work left per environment and status (through the
    partial index of open parts: costs the open work, never the report history)."""
    m = lsm_metric_compliance
    checks = [
        (r[0], r[1], r[2], r[3], int(r[4]))
        for r in conn.execute(select(m.c.env_id, m.c.agent, m.c.resource_type, m.c.outcome, m.c.count))
    ]
    query = (
        select(_part.c.env_id, _part.c.status, func.count())
        .where(_part.c.status.in_(OPEN_STATUSES))
        .group_by(_part.c.env_id, _part.c.status)
    )
    parts = [(r[0], r[1], int(r[2])) for r in conn.execute(query)]
    return checks, parts


__all__ = [
    "CLAIM_WINDOW",
    "OPEN_PART_SQL",
    "ClaimedPart",
    "create_report",
    "finish_part",
    "get_report",
    "give_back",
    "holds",
    "items_page",
    "list_reports",
    "metric_rows",
    "open_parts",
    "outcome_counts",
    "take_part",
    "write_items",
]
