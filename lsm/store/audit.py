"""The audit trail: who did what, when, under which request.

Three tables answer it together, so that nothing is written twice: ``lsm_audit`` (environments,
settings and tokens), the instance event log (``lsm_event``: every transfer, with its actor and
request id) and the compile queue (``lsm_compile``: every compile request, with its actor and
request id). ``list_audit`` reads the three as one list, newest first, with the filters applied
inside each part and each part cut to the page's end before they merge.

Cost: ``lsm_audit`` is indexed for its filters; the event log and the compile queue are not
indexed by time or actor (an index there would cost every order and compile a write for the
sake of an admin's occasional read), so a page of the audit trail reads those two tables
once, keeping only the newest lines it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, String, cast, literal, select, union_all
from sqlmodel import Session

from lsm.store.auth.tables import AuditRow
from lsm.store.tables import CompileRow, EventRow


def record(
    session: Session,
    *,
    actor: str | None,
    request_id: str | None,
    action: str,
    target: str | None = None,
    env_id: str | None = None,
    **details: Any,
) -> AuditRow:
    """Add an audit line in the caller's transaction (it commits with the change it describes)."""
    row = AuditRow(
        actor=actor, request_id=request_id, action=action, target=target, env_id=env_id, details=details
    )
    session.add(row)
    return row


@dataclass(frozen=True)
class AuditFilter:
    """What ``list_audit`` keeps: ``action`` matches itself and its sub-actions
    (``instance`` matches ``instance.create``)."""

    actor: str | None = None
    action: str | None = None
    since: datetime | None = None
    env_ids: list[str] | None = None
    limit: int = 100
    offset: int = 0


def _filtered(query: Select[Any], columns: Any, action: Any, flt: AuditFilter) -> Select[Any]:
    if flt.actor is not None:
        query = query.where(columns.actor == flt.actor)
    if flt.since is not None:
        query = query.where(columns.created_at >= flt.since)
    if flt.env_ids is not None:
        query = query.where(columns.env_id.in_(flt.env_ids))
    if flt.action is not None:
        query = query.where((action == flt.action) | action.startswith(flt.action + ".", autoescape=True))
    return query


def list_audit(session: Session, flt: AuditFilter) -> list[dict[str, Any]]:
    """Audit lines, event lines and compile requests as one list, newest first."""
    audit = AuditRow.__table__.c  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    event = EventRow.__table__.c  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    compile_ = CompileRow.__table__.c  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    event_action = literal("instance.", String) + event.trigger
    compile_action = literal("compile.", String) + compile_.kind
    parts = [
        _filtered(
            select(
                audit.created_at.label("time"),
                audit.actor,
                audit.request_id,
                cast(audit.action, String).label("action"),
                audit.target,
                audit.env_id,
                literal("audit", String).label("source"),
                cast(audit.id, String).label("ref"),
            ),
            audit,
            audit.action,
            flt,
        ),
        _filtered(
            select(
                event.created_at.label("time"),
                event.actor,
                event.request_id,
                event_action.label("action"),
                event.instance_id.label("target"),
                event.env_id,
                literal("event", String).label("source"),
                cast(event.id, String).label("ref"),
            ),
            event,
            event_action,
            flt,
        ),
        _filtered(
            select(
                compile_.created_at.label("time"),
                compile_.actor,
                compile_.request_id,
                compile_action.label("action"),
                compile_.id.label("target"),
                compile_.env_id,
                literal("compile", String).label("source"),
                compile_.id.label("ref"),
            ),
            compile_,
            compile_action,
            flt,
        ),
    ]
    # each part keeps only its newest offset+limit lines (a top-N, no full sort), then they merge
    top = flt.offset + flt.limit
    # (the same order as the merge's within one part, so that ties at the cut are cut alike)
    tops = [
        part.order_by(part.selected_columns.time.desc(), part.selected_columns.ref.desc())
        .limit(top)
        .subquery()
        for part in parts
    ]
    merged = union_all(*(select(sub) for sub in tops)).subquery()
    query = (
        select(merged)
        .order_by(merged.c.time.desc(), merged.c.source, merged.c.ref.desc())
        .limit(flt.limit)
        .offset(flt.offset)
    )
    rows = session.execute(query).mappings().all()
    details = _details(session, [int(r["ref"]) for r in rows if r["source"] == "audit"])
    return [
        {
            "time": r["time"],
            "actor": r["actor"],
            "request_id": r["request_id"],
            "action": r["action"],
            "target": r["target"],
            "env_id": r["env_id"],
            "details": details.get(int(r["ref"]), {}) if r["source"] == "audit" else {},
        }
        for r in rows
    ]


def _details(session: Session, ids: list[int]) -> dict[int, dict[str, Any]]:
    if not ids:
        return {}
    audit = AuditRow.__table__.c  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    return {
        row.id: dict(row.details)
        for row in session.execute(select(audit.id, audit.details).where(audit.id.in_(ids)))
    }
