"""``Supervisor``: the worker processes ``lsm server`` starts, watches and stops.

Why processes: the API, the compile worker and the deploy agent in one process share one
interpreter lock, so the embedded default used one core however many the machine has. The
server now starts its compile work (and its deploy agent) as ``lsm worker`` child processes,
the configuration the project measured faster, without asking the operator to run them.
Model code runs one level further down, in the worker's compile processes
(``lsm.compiler.isolation``), where a hung or greedy model is stopped and measured. So one
process tree: the server, its workers, their compile processes, each level watching the next.

* **Start.** Each child runs ``python -m lsm.cli worker`` with the server's resolved settings
  (``SETTINGS_ENV``, JSON) and the supervisor's pid (``PARENT_ENV``): a child sees exactly
  the configuration the server loaded (file, environment, options), not its own reading.
* **Watch.** One thread looks at the children; a child that exits unasked (a crash, a kill
  -9, an OOM kill) is started again after a pause that doubles while it keeps failing, and
  is reset once a child stayed up for ``STEADY_S``. Each such event is one log line.
* **Stop.** ``stop`` sends SIGINT (the worker stops cleanly: it finishes what it holds and
  gives its claims back), waits ``grace`` seconds, then kills.
* **The server dies first.** A child asks the kernel to kill it when the supervisor's thread
  dies (``PR_SET_PDEATHSIG``, ``die_with_parent``), so a kill -9 of the server does not leave
  workers holding the SQLite worker lease against the next server; whatever they held is
  taken over as after any other kill.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["PARENT_ENV", "SETTINGS_ENV", "Child", "Supervisor", "die_with_parent", "worker_children"]

logger = logging.getLogger("lsm.supervisor")

#: the server's resolved settings, as JSON, for a supervised ``lsm worker``
SETTINGS_ENV = "LSM_SUPERVISED_SETTINGS"
#: the pid of the supervising server: a child whose parent is another process stops
PARENT_ENV = "LSM_SUPERVISOR_PID"
#: seconds a child must stay up before its restart pause starts again from the first
STEADY_S = 60.0
FIRST_PAUSE_S = 0.5
LONGEST_PAUSE_S = 30.0
#: seconds between looks at the children
LOOK_S = 0.2
_PR_SET_PDEATHSIG = 1


@dataclass
class Child:
    """One supervised process: what to run, and its current state."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    pause: float = FIRST_PAUSE_S
    restart_at: float | None = None
    restarts: int = 0
    exits: list[int] = field(default_factory=list)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.poll() is None else None


class Supervisor:
    """Starts ``children``, restarts those that exit unasked, stops them all on ``stop``."""

    def __init__(self, children: Sequence[Child], *, grace: float = 15.0) -> None:
        self.children = list(children)
        self.grace = grace
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start every child from the watching thread (a child's death signal is tied to the
        thread that started it, so that thread must live as long as the supervisor)."""
        started = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(started,), name="lsm-supervisor", daemon=True
        )
        self._thread.start()
        started.wait()

    def stop(self) -> None:
        """Ask every child to stop (SIGINT), kill those still running after ``grace`` seconds.

        The watching thread does it: a child's death signal fires when the thread that
        started it ends, so that thread ends only once the children are gone."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()

    def _stop_children(self) -> None:
        running = [c.process for c in self.children if c.process is not None and c.process.poll() is None]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + self.grace
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.warning("worker process %s did not stop in %.0f s: killed", process.pid, self.grace)
                process.kill()
                process.wait()

    def pids(self) -> list[int]:
        return [pid for pid in (c.pid for c in self.children) if pid is not None]

    def _spawn(self, child: Child) -> None:
        env = {**os.environ, **child.env, PARENT_ENV: str(os.getpid())}
        # a session of its own: a Ctrl-C at the server's terminal reaches the server alone,
        # which then stops its children in order instead of racing them
        child.process = subprocess.Popen(list(child.argv), env=env, start_new_session=True)
        child.started_at = time.monotonic()
        child.restart_at = None

    def _watch(self, started: threading.Event) -> None:
        try:
            for child in self.children:
                self._spawn(child)
        finally:
            started.set()
        try:
            while not self._stopping.wait(LOOK_S):
                now = time.monotonic()
                for child in self.children:
                    self._look(child, now)
        finally:
            self._stop_children()

    def _look(self, child: Child, now: float) -> None:
        process = child.process
        if process is not None and child.restart_at is None:
            code = process.poll()
            if code is None:
                if now - child.started_at >= STEADY_S:
                    child.pause = FIRST_PAUSE_S
                return
            child.exits.append(code)
            if now - child.started_at >= STEADY_S:
                child.pause = FIRST_PAUSE_S
            child.restart_at = now + child.pause
            logger.warning(
                "%s (pid %s) exited with status %s; starting it again in %.1f s",
                child.name,
                process.pid,
                code,
                child.pause,
            )
            child.pause = min(LONGEST_PAUSE_S, child.pause * 2)
        if child.restart_at is not None and now >= child.restart_at:
            child.restarts += 1
            try:
                self._spawn(child)
            except OSError as exc:  # no process could be made now (fork refused, say): later
                child.restart_at = now + child.pause
                logger.warning(
                    "%s could not be started (%s); trying again in %.1f s", child.name, exc, child.pause
                )
                child.pause = min(LONGEST_PAUSE_S, child.pause * 2)


def worker_children(settings: Sequence[str]) -> list[Child]:
    """One supervised ``lsm worker`` per entry of ``settings`` (each child's resolved settings,
    as JSON)."""
    argv = [sys.executable, "-m", "lsm.cli", "worker"]
    return [
        Child(name=f"worker {index + 1}", argv=argv, env={SETTINGS_ENV: one})
        for index, one in enumerate(settings)
    ]


def die_with_parent() -> None:
    """In a supervised child: be killed when the supervisor dies, and stop now if it already
    has (the parent is no longer the pid it was started by). Linux only; elsewhere a no-op."""
    parent = os.environ.get(PARENT_ENV)
    if parent is None or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        logger.warning("could not ask to die with the server (errno %s)", ctypes.get_errno())
    if os.getppid() != int(parent):
        os._exit(1)
