"""``Scheduler``: periodic jobs per environment, run by one process at a time.

Why in the database: every process of an installation may run a scheduler (each ``lsm
server`` and ``lsm worker`` does), but a tick must fire once. The scheduler that holds the
``scheduler`` lease fires; the others stand by and take over within the lease time when it
dies. The last tick of each job is stored (``lsm_schedule``) so that a take-over neither
repeats nor skips a tick.

Jobs today: ``auto_full_compile`` (a cron expression in UTC, per environment): each tick
requests a full exporting compile, which collects shared resources that no instance produces
any more; a tick is skipped while a full compile is already queued. The same loop will run
repair deploys and discovery.

A job is first *seen* when its environment sets a cron: that moment's previous tick is
recorded without firing (nothing is owed for the time before), and every later tick fires.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from croniter import croniter
from sqlmodel import Session

from lsm.schemas.compiles import CompileKind
from lsm.services.leases import Lease, process_identity
from lsm.store.compiles import queue as compile_queue
from lsm.store.compiles.requests import CompileOrder, enqueue
from lsm.store.database import Database
from lsm.store.tables import ScheduleRow, utcnow
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

JOB = "auto_full_compile"
LEASE = "scheduler"


class Scheduler:
    """A work source that never hands out work: it fires due ticks while it holds the lease.

    ``schedules()`` lists ``(env_id, cron)`` for every environment (cron empty = off).
    """

    name = "scheduler"

    def __init__(
        self,
        db: Database,
        schedules: Callable[[], Iterable[tuple[str, str]]],
        *,
        check_every: float = 1.0,
        lease_ttl: float = 15.0,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.schedules = schedules
        self.check_every = check_every
        self.clock = clock
        owner, info = process_identity("scheduler")
        self.lease = Lease(db, LEASE, owner, ttl=lease_ttl, info=info)
        self._next_check = 0.0

    # -- WorkSource ---------------------------------------------------------------------------
    def claim(self) -> None:
        if time.monotonic() < self._next_check:
            return None
        self._next_check = time.monotonic() + self.check_every
        try:
            if not self.lease.held:
                self.lease.acquire()
            if self.lease.held:
                self.tick(self.clock())
        except Exception as exc:  # the next check tries again (a tick is stored, never lost)
            log_failure(log, exc, "scheduler round failed")
        return None

    def heartbeat(self, running: Sequence[object]) -> None:
        """Nothing is handed out as work; the lease is kept by ``keepalive``."""

    def release(self, running: Sequence[object]) -> None:
        """Nothing is handed out as work."""

    def keepalive(self) -> None:
        if self.lease.held and not self.lease.keep():
            log.warning("scheduler lease lost; another process schedules now")

    def shutdown(self) -> None:
        self.lease.release()

    # -- ticks -----------------------------------------------------------------------------------------
    def tick(self, now: datetime) -> list[str]:
        """Fire every job due at ``now``; returns the compile ids requested."""
        requested: list[str] = []
        due = [(env_id, cron) for env_id, cron in self.schedules() if cron]
        if not due:
            return requested
        with self.db.write() as session:
            for env_id, cron in due:
                compile_id = self._fire_if_due(session, env_id, cron, now)
                if compile_id is not None:
                    requested.append(compile_id)
        for compile_id in requested:  # the loop's next claim, or NOTIFY elsewhere, picks them up
            log.info("auto_full_compile requested compile %s", compile_id)
        return requested

    def _fire_if_due(self, session: Session, env_id: str, cron: str, now: datetime) -> str | None:
        previous = croniter(cron, now.astimezone(UTC)).get_prev(datetime)
        row = session.get(ScheduleRow, (env_id, JOB), with_for_update=True)
        if row is None:
            session.add(ScheduleRow(env_id=env_id, job=JOB, last_tick=previous))
            return None
        last = row.last_tick  # UTCDateTime: aware, in UTC
        if last is not None and last >= previous:
            return None
        row.last_tick = previous
        session.add(row)
        if compile_queue.queued_count(session, env_id, CompileKind.FULL):
            return None  # one is waiting already: it covers this tick
        order = CompileOrder(
            env_id=env_id,
            kind=CompileKind.FULL,
            reason=f"auto_full_compile {cron!r}: tick {previous:%Y-%m-%d %H:%M} UTC",
            actor="scheduler",
        )
        return enqueue(session, order).id
