"""``CompileService``: the compile queue as a source of work for the service loop.

Why: the loop (``lsm.services``) knows threads, heartbeats and time limits; this module knows
what a compile claim is. Each claim goes round the environments that have work, so one busy or
broken environment never starves another:

* an **exporting** batch when this worker gets the environment's compile lock (one exporting
  compile per environment across every worker: desired-state versions are linear);
* otherwise a **validation** batch (many validation requests, run together where their
  selections do not overlap: ``lsm.compiler.validation``); validations of one environment run
  beside its exporting compile and in several workers at once.

A compile runs under the environment's ``compile_timeout``: its model code runs in a compile
process (``lsm.compiler.isolation``), killed at the limit; code of the compile's own thread is
stopped by the loop. Either way the request fails with a report that says where the model was
(its traceback); other environments keep compiling on the other runner threads meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from sqlmodel import Session

from lsm.compiler.isolation import CompileClock, PoolStopped, clocked
from lsm.compiler.locks import EnvironmentLocks, Held, SelectionLocks
from lsm.compiler.queue import Batch, CompileQueue, LeaseLost
from lsm.compiler.runner import CompileRunner
from lsm.errors import TimeLimitExceeded
from lsm.orchestration import EnvironmentContext
from lsm.store.compiles.queue import Pending
from lsm.store.environments.settings import EnvironmentSettings
from lsm.store.transient import caused_by_transient, is_transient, log_failure, retry_transient

log = logging.getLogger(__name__)

#: after a validation batch found every selection busy elsewhere, wait this long before retrying
BUSY_PAUSE = 0.05

#: claims a validation work makes inside its rounds' transactions before it gives its runner
#: thread back to the loop (``ValidationWork._more``)
MAX_CONTINUED = 8


class _CompileWork:
    """Common to both kinds: the batches held, the time limit, and failing on overrun."""

    def __init__(self, service: CompileService, env_id: str, batches: list[Batch], timeout: float) -> None:
        self.service = service
        self.env_id = env_id
        self.batches = batches
        self.timeout = timeout
        #: the time limit; a compile process holds it while the model runs (``lsm.compiler.isolation``)
        self.clock = CompileClock(timeout)
        #: ids of the batches that ended (no lease to renew any more)
        self.done: set[str] = set()
        lead = batches[0].leader
        self.label = f"compile {lead.id} ({lead.kind}, {len(batches)} batch(es)) of environment {env_id}"

    def deadline(self) -> float | None:
        return self.clock.loop_deadline()

    def restart_clock(self) -> None:
        self.clock.restart()

    def expire(self) -> None:
        """The thread did not stop: fail what is still held (fenced, so a late result is dropped)."""
        for batch in self.batches:
            self.service.fail(batch, _timeout_report(self.timeout, None, stuck=True))


class ExportWork(_CompileWork):
    def __init__(
        self, service: CompileService, env_id: str, batch: Batch, held: Held, timeout: float
    ) -> None:
        super().__init__(service, env_id, [batch], timeout)
        self.held = held

    def run(self) -> None:
        batch = self.batches[0]
        self.restart_clock()
        try:
            with clocked(self.clock):
                self.service.runner.run_batch(self.env_id, batch)
        except TimeLimitExceeded as exc:
            self.service.fail(batch, _timeout_report(self.timeout, exc))
        except PoolStopped:
            _give_back(self)
        except Exception as exc:  # the runner records the compile's own errors: this is the database
            if not caused_by_transient(exc):
                raise
            log_failure(log, exc, "%s: the database failed; its requests go back to the queue", self.label)
            self.service.give_back(self.batches)
        finally:
            self.clock.stop()
            self.service.let_go(self.env_id, self.held.release, self.label)


class ValidationWork(_CompileWork):
    def __init__(
        self,
        service: CompileService,
        ctx: EnvironmentContext,
        batches: list[Batch],
        timeout: float,
        *,
        limit: int,
    ):
        super().__init__(service, ctx.env_id, batches, timeout)
        self.ctx = ctx
        self.limit = limit
        #: claims made inside a round's transaction (``_more``)
        self.continued = 0

    def _more(self, session: Session) -> list[Batch]:
        """The next validation requests of the environment, claimed in the transaction that
        applies this work's last round, under the same lease token (so the heartbeat renews
        them with the rest); none once the loop stops, or after ``MAX_CONTINUED`` such claims,
        so that the runner thread goes back to the loop and its round over the environments."""
        if self.continued >= MAX_CONTINUED or self.service.stopping():
            return []
        owner = self.batches[0].owner
        return self.service.queue.claim_validations(self.env_id, owner, limit=self.limit, session=session)

    def _claimed(self, batches: list[Batch]) -> None:
        """The claim of ``_more`` committed: these batches are this work's (the heartbeat renews
        them, a shutdown gives them back)."""
        self.continued += 1
        self.batches.extend(batches)

    def run(self) -> None:
        locks = self.service.locks.selections(self.env_id)
        try:
            with clocked(self.clock):
                left = self._run_validations(locks)
            if left:
                self.service.busy(self.env_id)
                self.service.give_back(left)
        except TimeLimitExceeded:
            # it landed outside a model run (those fail their own validation): give back the rest
            self.service.give_back(self.batches)
        except PoolStopped:
            _give_back(self)
        except Exception as exc:
            log_failure(log, exc, "%s failed; its requests go back to the queue", self.label)
            self.service.give_back(self.batches)
        finally:
            self.clock.stop()
            self.service.let_go(self.env_id, locks.release, self.label)

    def _run_validations(self, locks: SelectionLocks) -> list[Batch]:
        return self.service.runner.validations.run(
            self.ctx,
            list(self.batches),
            locks,
            started=self.restart_clock,
            ended=self.done.add,
            more=self._more,
            claimed=self._claimed,
        )


class CompileService:
    name = "compile"

    def __init__(
        self,
        queue: CompileQueue,
        locks: EnvironmentLocks,
        runner: CompileRunner,
        contexts: Callable[[str], EnvironmentContext],
        *,
        worker: str,
        per_environment: int = 1,
    ) -> None:
        self.queue = queue
        #: runner threads one environment may hold at once: fewer than the loop has, so that a
        #: hung model in one environment can never occupy every thread
        self.per_environment = max(1, per_environment)
        self._running: dict[str, int] = {}
        self.locks = locks
        self.runner = runner
        self.contexts = contexts
        self.worker = worker
        self._turn = 0
        self._busy_until: dict[str, float] = {}
        self._guard = threading.Lock()
        self.listeners: list[Callable[[str], None]] = []
        #: whether the service loop is stopping (set by the wiring): works claim nothing more
        self.stopping: Callable[[], bool] = lambda: False

    def claim(self) -> ExportWork | ValidationWork | None:
        pending = self.queue.environments_with_work()
        if not pending:
            return None
        with self._guard:
            self._turn = (self._turn + 1) % len(pending)
            start = self._turn
        for offset in range(len(pending)):
            env = pending[(start + offset) % len(pending)]
            if not self._take_slot(env.env_id):
                continue
            try:
                work = self._claim_in(env)
            except BaseException:
                self.finished(env.env_id, notify=False)
                raise
            if work is not None:
                return work
            self.finished(env.env_id, notify=False)
        return None

    def _claim_in(self, env: Pending) -> ExportWork | ValidationWork | None:
        ctx, settings = self._context(env.env_id)
        if env.exporting:
            work = self._claim_exporting(env.env_id, settings)
            if work is not None:
                return work
        # running validations too: those of a dead worker are taken over once their lease expired
        wanted = env.validations or env.running_validations
        if not wanted or ctx is None or time.monotonic() < self._busy_until.get(env.env_id, 0):
            return None
        owner = self.queue.new_owner(self.worker)
        batches = self.queue.claim_validations(env.env_id, owner, limit=settings.validation_batch)
        if not batches:
            return None
        return ValidationWork(self, ctx, batches, settings.compile_timeout, limit=settings.validation_batch)

    def _take_slot(self, env_id: str) -> bool:
        """One more runner thread for ``env_id``, unless it holds its share already."""
        with self._guard:
            if self._running.get(env_id, 0) >= self.per_environment:
                return False
            self._running[env_id] = self._running.get(env_id, 0) + 1
            return True

    def _claim_exporting(self, env_id: str, settings: EnvironmentSettings) -> ExportWork | None:
        held = self.locks.try_export(env_id)
        if held is None:
            return None
        try:
            batch = self.queue.claim_exporting(
                env_id,
                self.queue.new_owner(self.worker),
                batched=settings.batched_partial_compiles,
                backoff=settings.recompile_backoff,
            )
        except BaseException:
            _drop_locks(held.release, f"an exporting claim in environment {env_id}")
            raise
        if batch is None:
            _drop_locks(held.release, f"an exporting claim in environment {env_id}")
            return None
        return ExportWork(self, env_id, batch, held, settings.compile_timeout)

    def _context(self, env_id: str) -> tuple[EnvironmentContext | None, EnvironmentSettings]:
        """The environment's context; a model that does not load still lets exporting requests be
        claimed, so that they fail with its error instead of waiting for ever."""
        try:
            ctx = self.contexts(env_id)
            return ctx, ctx.settings
        except Exception as exc:
            if is_transient(exc):
                raise  # the database, not the model: the claim fails and the loop backs off
            log.exception("environment %s: its model or settings do not load", env_id)
            return None, EnvironmentSettings()

    def heartbeat(self, running: Sequence[Any]) -> None:
        """Renew the leases of the batches still running (a validation work finishes its batches
        one by one: those done have no lease left to renew)."""
        batches = [b for work in running for b in work.batches if b.leader.id not in work.done]
        lost = retry_transient(lambda: self.queue.renew(batches), what="renewing compile leases", logger=log)
        for batch in lost:
            log.warning("compile %s: lease lost while running (taken over)", batch.leader.id)

    def release(self, running: Sequence[Any]) -> None:
        self.give_back([b for work in running for b in work.batches])

    def give_back(self, batches: list[Batch]) -> None:
        """Put claimed requests back in the queue (not counted as an attempt), through a lost
        connection; if the database stays away, their leases expire and they are taken over."""
        retry_transient(lambda: self.queue.release(batches), what="giving compiles back", logger=log)

    def fail(self, batch: Batch, report: dict[str, Any]) -> None:
        """Record ``batch`` as failed with ``report``, unless its lease was lost meanwhile."""
        try:
            retry_transient(
                lambda: self.queue.finish(batch, status="failed", report=report),
                what=f"failing compile {batch.leader.id}",
                logger=log,
            )
        except LeaseLost:
            pass

    def let_go(self, env_id: str, release: Callable[[], None], label: str) -> None:
        """Give a work's compile locks back, then its thread slot, whatever the release does.

        Why: a lock given back on a connection that died raises (``lsm.compiler.locks`` then
        discards that connection, whose server session ends with its locks); the slot must be
        freed all the same, or the environment would never be claimed again by this worker.
        """
        try:
            _drop_locks(release, label)
        finally:
            self.finished(env_id)

    def busy(self, env_id: str) -> None:
        self._busy_until[env_id] = time.monotonic() + BUSY_PAUSE

    def finished(self, env_id: str, *, notify: bool = True) -> None:
        """Work of ``env_id`` ended (or a claim found none): its thread slot is free again."""
        with self._guard:
            left = self._running.get(env_id, 0) - 1
            if left > 0:
                self._running[env_id] = left
            else:
                self._running.pop(env_id, None)
        if not notify:
            return
        for listener in self.listeners:
            try:
                listener(env_id)
            except Exception as exc:  # a wake-up only: the others poll as well
                log_failure(log, exc, "compile listener failed")


def _drop_locks(release: Callable[[], None], label: str) -> None:
    """``release()``; a failure is logged, not raised (its locks are gone with its connection)."""
    try:
        release()
    except Exception as exc:
        log_failure(log, exc, "%s: giving its compile locks back failed", label)


def _give_back(work: _CompileWork) -> None:
    """The compile processes stopped under ``work`` (the engine stops): another process runs it."""
    log.info("%s: the compile processes stopped; its requests go back to the queue", work.label)
    work.service.give_back([b for b in work.batches if b.leader.id not in work.done])


def _timeout_report(timeout: float, exc: BaseException | None, *, stuck: bool = False) -> dict[str, Any]:
    message = (
        f"the compile did not finish within its time limit of {timeout:g} s (setting compile_timeout)"
        + ("; it did not stop (blocked outside Python) and its result will be discarded" if stuck else "")
    )
    error: dict[str, Any] = {"error": "compile_timeout", "message": message}
    if exc is not None:
        error["traceback"] = "".join(traceback.format_exception(exc))
    return {"error": error}
