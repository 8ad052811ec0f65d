"""``CompileWorker``: a thread that drains the compile queue, environment by environment.

Why a thread in the server process: the embedded default runs API, worker and agent in one
process. ``lsm worker`` runs the same loop in its own process against PostgreSQL. The worker
sleeps on an event that the orchestration sets after committing a compile request (in
process), and polls the queue every ``poll_interval`` seconds for requests written by other
processes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from lsm.compiler.locks import EnvironmentLocks
from lsm.compiler.queue import Batch, CompileQueue
from lsm.inventory.settings import EnvironmentSettings

log = logging.getLogger(__name__)


class CompileWorker:
    def __init__(
        self,
        queue: CompileQueue,
        locks: EnvironmentLocks,
        run_batch: Callable[[str, Batch], None],
        settings_of: Callable[[str], EnvironmentSettings],
        *,
        poll_interval: float = 1.0,
        name: str = "lsm-compile-worker",
    ) -> None:
        self.queue = queue
        self.locks = locks
        self.run_batch = run_batch
        self.settings_of = settings_of
        self.poll_interval = poll_interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wake(self, _env_id: str | None = None) -> None:
        self._wake.set()

    def run_once(self) -> bool:
        """Claim and run at most one batch per environment; whether anything ran."""
        ran = False
        for env_id in self.queue.pending_environments():
            try:
                settings = self.settings_of(env_id)
            except Exception:
                log.exception("environment %s: cannot read its settings; its compiles wait", env_id)
                continue
            with self.locks.hold(env_id) as held:
                if not held:
                    continue
                batch = self.queue.claim(
                    env_id, batched=settings.batched_partial_compiles, backoff=settings.recompile_backoff
                )
                if batch is None:
                    continue
                self.run_batch(env_id, batch)
                ran = True
        return ran

    def drain(self, max_rounds: int = 10_000) -> int:
        """Run until this worker can claim nothing more; returns the rounds run.

        For tests and embedded use: requests of an environment whose compile lock another
        worker holds are left to that worker.
        """
        rounds = 0
        while rounds < max_rounds and self.run_once():
            rounds += 1
        return rounds

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()  # before looking: a wake during the round is not lost
            try:
                if self.run_once():
                    continue
            except Exception:  # the loop must survive a broken batch; the batch records its error
                log.exception("compile worker round failed")
            self._wake.wait(self.poll_interval)
