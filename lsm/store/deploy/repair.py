"""The periodic repair of deployed resources (setting ``deploy_repair_interval``).

Why a stored tick: several agent processes look at the same environments; the tick in
``lsm_schedule`` (job ``deploy_repair``), read under its row lock, lets one of them fire the repair
once per interval, whichever it is.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlmodel import Session

from lsm.schemas.deploy import ResourceStatus
from lsm.store.batches import chunks, utc
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.tables import ScheduleRow

_state = lsm_resource_state

#: the ``lsm_schedule`` job of the periodic repair (setting ``deploy_repair_interval``)
REPAIR_JOB = "deploy_repair"


def repair_if_due(session: Session, env_id: str, now: datetime, interval: float) -> int:
    """Periodic repair: when ``interval`` seconds passed since the last one, every deployed row of
    ``env_id`` becomes ``pending`` (re-read, drift fixed). The tick is stored (``lsm_schedule``,
    job ``deploy_repair``) and its row locked, so one agent process fires it once; the first look
    only starts the clock. Returns the rows set to pending."""
    if interval <= 0:
        return 0
    row = session.get(ScheduleRow, (env_id, REPAIR_JOB), with_for_update=True)
    if row is None:
        _start_clock(session, env_id, now)
        return 0
    last = utc(row.last_tick)
    if last is not None and (now - last).total_seconds() < interval:
        return 0
    row.last_tick = now
    session.add(row)
    conn = session.connection()
    # locked in the global order first (an UPDATE of the environment locks in scan order)
    deployed = (
        select(_state.c.resource_id)
        .where(_state.c.env_id == env_id, _state.c.status == ResourceStatus.DEPLOYED)
        .order_by(_state.c.resource_id)
    )
    if conn.dialect.name == "postgresql":
        deployed = deployed.with_for_update(of=_state)
    ids = [r[0] for r in conn.execute(deployed)]
    for part in chunks(ids):
        conn.execute(
            update(_state)
            .where(
                _state.c.env_id == env_id,
                _state.c.resource_id.in_(part),
                _state.c.status == ResourceStatus.DEPLOYED,
            )
            .values(status=ResourceStatus.PENDING, next_attempt_at=None)
        )
    return len(ids)


def _start_clock(session: Session, env_id: str, now: datetime) -> None:
    """The first look at ``env_id`` stores its tick. Agent processes start together and look at
    once: on PostgreSQL the insert gives way to a row another one inserted meanwhile (its
    clock started: nothing to do), where a plain insert failed the look with a duplicate key.
    On SQLite the write transaction is exclusive."""
    if session.connection().dialect.name != "postgresql":
        session.add(ScheduleRow(env_id=env_id, job=REPAIR_JOB, last_tick=now))
        return
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    table = ScheduleRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    session.connection().execute(
        pg_insert(table).values(env_id=env_id, job=REPAIR_JOB, last_tick=now).on_conflict_do_nothing()
    )


__all__ = ["REPAIR_JOB", "repair_if_due"]
