"""Tailing the event log, finished compiles and deploy outcomes by a cursor (``/api/v1/events``).

Why a cursor over the tables and not an in-process queue: a compile finished by an ``lsm
worker`` in another process, or a change served by another API process, must reach every
stream. The tables are the one place every process writes; each stream remembers where it
stands (the last event-log id, the last ``(finished_at, id)`` of a finished compile, the last
action-log id) and reads what came after it, so a client that reconnects with that position
misses nothing and sees nothing twice.

Known limit: finished compiles are ordered by ``finished_at``, written by the worker's clock;
workers on machines whose clocks disagree by more than a compile's duration may have a
completion ordered before a position a stream already passed. And on PostgreSQL, ids are
handed out before commit: a transaction that commits after a later id was read would be
skipped by a reader that already passed it. ``ids_between`` and ``running_since`` are what a
reader needs to hold back what such a transaction could still precede (``lsm.facade.holdback``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select as core_select
from sqlmodel import Session, col, func, or_, select

from lsm.schemas.deploy import FINAL_STATUSES
from lsm.store.deploy.tables import lsm_resource_action
from lsm.store.tables import CompileRow, EventRow, InstanceRow

_EVENTS = EventRow.metadata.tables["lsm_event"]
#: the tables whose ids are feed positions, by feed kind
POSITION_TABLES = {"event": _EVENTS, "action": lsm_resource_action}


def ids_between(session: Session, kind: str, after: int, upto: int) -> list[int]:
    """Every id in ``(after, upto]`` of the ``kind`` table ("event" or "action") that this
    snapshot sees, in any environment, ascending: a primary-key range read. An id missing from
    it is a transaction still committing (or one rolled back)."""
    t = POSITION_TABLES[kind]
    query = core_select(t.c.id).where(t.c.id > after, t.c.id <= upto).order_by(t.c.id)
    return [int(row[0]) for row in session.connection().execute(query)]


def running_since(session: Session, env_id: str) -> datetime | None:
    """When the oldest compile of the environment still running started (``None``: none runs);
    whatever it finishes later has a later ``finished_at``. ``ix_lsm_compile_active``."""
    query = core_select(func.min(CompileRow.started_at)).where(
        col(CompileRow.status) == "running", col(CompileRow.env_id) == env_id
    )
    found = session.connection().execute(query).scalar()
    return found if isinstance(found, datetime) else None


def last_event_id(session: Session, env_id: str) -> int:
    """The newest event-log id of the environment (0 when there is none)."""
    found = session.exec(select(func.max(EventRow.id)).where(EventRow.env_id == env_id)).first()
    return int(found or 0)


def last_finished_compile(session: Session, env_id: str) -> tuple[datetime, str] | None:
    """The ``(finished_at, id)`` of the newest finished compile of the environment."""
    query = (
        select(CompileRow.finished_at, CompileRow.id)
        .where(CompileRow.env_id == env_id, col(CompileRow.finished_at).is_not(None))
        .order_by(col(CompileRow.finished_at).desc(), col(CompileRow.id).desc())
        .limit(1)
    )
    row = session.exec(query).first()
    return None if row is None or row[0] is None else (row[0], row[1])


def events_after(session: Session, env_id: str, after: int, limit: int) -> list[tuple[EventRow, str]]:
    """Event-log lines after id ``after``, oldest first, each with its instance's entity."""
    query = (
        select(EventRow, InstanceRow.entity)
        .join(InstanceRow, col(InstanceRow.id) == col(EventRow.instance_id))
        .where(EventRow.env_id == env_id, col(EventRow.id) > after)
        .order_by(col(EventRow.id))
        .limit(limit)
    )
    return [(event, entity) for event, entity in session.exec(query)]


def compiles_finished_after(
    session: Session, env_id: str, after: tuple[datetime, str] | None, limit: int
) -> list[CompileRow]:
    """Compiles finished after the ``(finished_at, id)`` position, in that order."""
    query = select(CompileRow).where(CompileRow.env_id == env_id, col(CompileRow.finished_at).is_not(None))
    if after is not None:
        at, compile_id = after
        query = query.where(
            or_(
                col(CompileRow.finished_at) > at,
                (col(CompileRow.finished_at) == at) & (col(CompileRow.id) > compile_id),
            )
        )
    query = query.order_by(col(CompileRow.finished_at), col(CompileRow.id)).limit(limit)
    return list(session.exec(query))


#: action-log statuses that are deploy outcomes (``pending``/``deploying`` never are)
OUTCOME_STATUSES = FINAL_STATUSES


def last_action_id(session: Session, env_id: str) -> int:
    """The newest action-log id of the environment (0 when there is none); ``ix_lsm_resource_action_env``."""
    t = lsm_resource_action
    found = session.connection().execute(core_select(func.max(t.c.id)).where(t.c.env_id == env_id)).scalar()
    return int(found or 0)


def actions_after(session: Session, env_id: str, after: int, limit: int) -> list[dict[str, Any]]:
    """Deploy outcomes (not dry runs) logged after action id ``after``, oldest first.

    A keyed range read of ``ix_lsm_resource_action_env`` (env, id): the cost is the lines read,
    never the size of the log.
    """
    t = lsm_resource_action
    query = (
        core_select(t)
        .where(
            t.c.env_id == env_id,
            t.c.id > after,
            t.c.dry_run.is_(False),
            t.c.status.in_(OUTCOME_STATUSES),
        )
        .order_by(t.c.id)
        .limit(limit)
    )
    return [dict(row) for row in session.connection().execute(query).mappings()]
