"""``ServiceLoop``: threads that claim leased work from work sources, run it, and keep it alive.

Why one loop: compile workers, the scheduler, deploy agents (discovery runs on them) and the
webhook dispatcher and sender all do the same things: claim work that other processes may also
want, hold it under a lease that a heartbeat renews, stop it when it overruns its time limit,
give it back on shutdown, and sleep until woken (in process, by ``LISTEN/NOTIFY`` on
PostgreSQL, or by a poll as fallback). A ``WorkSource`` says how to claim its kind of work; the
loop does the rest, once.

* **Threads.** ``threads`` runner threads each claim and run one piece of work at a time, going
  round the sources; so a long or hung compile of one environment never stops the others.
* **Leases.** A supervisor thread calls each source's ``heartbeat`` with the work it runs, every
  ``heartbeat_interval`` seconds (well inside the lease time), so live work is never taken over.
* **Time limits.** A piece of work has a ``deadline``. Past it, the supervisor raises
  ``TimeLimitExceeded`` inside the runner thread (``PyThreadState_SetAsyncExc``): Python code,
  such as a model in an endless loop, stops at its next bytecode and the work fails with a
  report. Code blocked inside C does not see the exception: after ``grace`` more seconds the
  work is ``expire``-d (its lease is failed, so its result is fenced out if it ever returns),
  the thread is abandoned, and a fresh runner thread takes its place.
* **Lost connections.** A round that fails on the database (``lsm.store.transient``) is
  logged in one line and tried again after a pause that grows while failures repeat; a failed
  heartbeat is tried at the next one. Sources retry what is safe to repeat themselves.
* **Shutdown.** ``stop`` claims nothing more, lets running work finish within the timeout, and
  gives what is still running back to its source (``release``) so another process runs it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from lsm.errors import TimeLimitExceeded
from lsm.interrupt import raise_in
from lsm.store.transient import Backoff, is_transient, log_failure

log = logging.getLogger(__name__)


class Work(Protocol):
    """One claimed piece of work."""

    label: str

    def run(self) -> None:
        """Do it and record the outcome; never raises for the work's own errors."""

    def deadline(self) -> float | None:
        """``time.monotonic()`` past which the work is stopped; ``None``: no limit."""

    def expire(self) -> None:
        """The thread did not stop after the time limit: fail what the work holds."""


class WorkSource(Protocol):
    name: str

    def claim(self) -> Work | None:
        """Claim one piece of work, or ``None`` when there is nothing this process may run."""

    def heartbeat(self, running: Sequence[Work]) -> None:
        """Renew the leases of ``running`` (work this source handed out that is still running)."""

    def release(self, running: Sequence[Work]) -> None:
        """Give ``running`` back on shutdown: another process takes it."""


@dataclass(eq=False)
class _Slot:
    number: int
    thread: threading.Thread | None = None
    source: WorkSource | None = None
    work: Work | None = None
    interrupted_at: float | None = None
    abandoned: bool = False
    wake: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the pause after rounds that failed on the database, growing while they keep failing
    backoff: Backoff = field(default_factory=Backoff)


class ServiceLoop:
    def __init__(
        self,
        sources: Sequence[WorkSource],
        *,
        threads: int = 2,
        poll_interval: float = 1.0,
        heartbeat_interval: float = 5.0,
        grace: float = 5.0,
        name: str = "lsm",
        keepalives: Sequence[Callable[[], None]] = (),
    ) -> None:
        self.sources = list(sources)
        self.threads = max(1, threads)
        self.poll_interval = poll_interval
        self.heartbeat_interval = heartbeat_interval
        self.grace = grace
        self.name = name
        self.keepalives = list(keepalives)
        self._slots: list[_Slot] = []
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._turn = 0
        self._turn_lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        for number in range(self.threads):
            self._spawn(_Slot(number))
        self._supervisor = threading.Thread(
            target=self._supervise, name=f"{self.name}-supervisor", daemon=True
        )
        self._supervisor.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Claim nothing more; wait for running work up to ``timeout``; give back the rest.

        A second call does not wait again: the first gave back what was still running."""
        if self._stop.is_set():
            timeout = 0.0
        self._stop.set()
        self.wake()
        deadline = time.monotonic() + timeout
        for slot in list(self._slots):
            if slot.thread is not None and slot.thread.is_alive():
                slot.thread.join(max(0.0, deadline - time.monotonic()))
        for source in self.sources:
            running = [s.work for s in self._slots if s.source is source and s.work is not None]
            if running:
                try:
                    source.release(running)
                except Exception as exc:  # their leases expire: another process takes them over
                    log_failure(log, exc, "%s: could not give back its work on shutdown", source.name)
        if self._supervisor is not None and self._supervisor.is_alive():
            self._supervisor.join(max(0.0, deadline - time.monotonic()) + 1.0)

    def wake(self, _topic: str | None = None) -> None:
        """New work may be waiting: every idle runner looks now."""
        for slot in self._slots:
            slot.wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def drain(self, max_rounds: int = 10_000) -> int:
        """Claim and run in the calling thread until no source has work; returns the pieces run.

        For tests and embedded use: work that another process holds is left to it.
        """
        ran = 0
        while ran < max_rounds:
            claimed = self._claim()
            if claimed is None:
                break
            claimed[1].run()
            ran += 1
        return ran

    # -- runner threads ---------------------------------------------------------------------------------
    def _spawn(self, slot: _Slot) -> None:
        slot.thread = threading.Thread(
            target=self._run, args=(slot,), name=f"{self.name}-runner-{slot.number}", daemon=True
        )
        self._slots.append(slot)
        slot.thread.start()

    def _claim(self) -> tuple[WorkSource, Work] | None:
        with self._turn_lock:
            start = self._turn
            self._turn = (self._turn + 1) % max(1, len(self.sources))
        for offset in range(len(self.sources)):
            source = self.sources[(start + offset) % len(self.sources)]
            work = source.claim()
            if work is not None:
                return source, work
        return None

    def _run(self, slot: _Slot) -> None:
        while not self._stop.is_set() and not slot.abandoned:
            try:
                slot.wake.clear()  # before looking: a wake during the round is not lost
                claimed = self._claim()
                if claimed is None:
                    slot.wake.wait(self.poll_interval)
                    continue
                with slot.lock:
                    slot.source, slot.work, slot.interrupted_at = claimed[0], claimed[1], None
                try:
                    claimed[1].run()
                finally:
                    with slot.lock:
                        slot.source, slot.work = None, None
            except TimeLimitExceeded:
                log.warning(
                    "%s: a time limit fired after its work had ended; ignored",
                    threading.current_thread().name,
                )
            except Exception as exc:  # the loop survives a broken claim; the work records its own errors
                log_failure(log, exc, "%s: a round failed", threading.current_thread().name)
                # a database that is away is given a growing pause, not a hot loop of failures
                slot.wake.wait(slot.backoff.next() if is_transient(exc) else self.poll_interval)
            else:
                slot.backoff.reset()

    # -- supervisor: heartbeats and time limits --------------------------------------------------
    def _supervise(self) -> None:
        last_beat = time.monotonic()
        while not self._stop.wait(min(0.5, self.heartbeat_interval)):
            now = time.monotonic()
            for slot in list(self._slots):
                self._enforce_deadline(slot, now)
            if now - last_beat >= self.heartbeat_interval:
                last_beat = now
                self._heartbeat()

    def _heartbeat(self) -> None:
        for keepalive in self.keepalives:
            try:
                keepalive()
            except Exception as exc:
                log_failure(log, exc, "keepalive failed")
        for source in self.sources:
            running = [
                s.work for s in self._slots if s.source is source and s.work is not None and not s.abandoned
            ]
            if not running:
                continue
            try:
                source.heartbeat(running)
            except Exception as exc:  # the next heartbeat tries again, well inside the lease
                log_failure(log, exc, "%s: heartbeat failed", source.name)

    def _enforce_deadline(self, slot: _Slot, now: float) -> None:
        with slot.lock:
            work = slot.work
            if work is None or slot.abandoned or slot.thread is None:
                return
            deadline = work.deadline()
            if deadline is None or now < deadline:
                slot.interrupted_at = None
                return
            if slot.interrupted_at is None:
                slot.interrupted_at = now
                log.warning("%s: %s overran its time limit; stopping it", slot.thread.name, work.label)
                raise_in(slot.thread, TimeLimitExceeded)
                return
            if now - slot.interrupted_at < self.grace:
                return
            slot.abandoned = True
        log.error("%s: %s did not stop; failing it and replacing the thread", slot.thread.name, work.label)
        try:
            work.expire()
        except Exception:
            log.exception("could not expire %s", work.label)
        if not self._stop.is_set():
            self._spawn(_Slot(len(self._slots)))
