"""Turns at SQLite's write lock among the threads of one process.

Why: SQLite has one write lock per file. Between processes, a writer waits for it in
``begin_immediate`` (``lsm.store.database``), trying every few milliseconds. Inside one
process that polling is waste: threads would wake each other hundreds of times a second, each
waking taking the GIL. So the threads of a process queue here first, on a condition variable,
and only the one whose turn it is waits for other processes.

Who goes first: a writer someone is waiting for (``urgent``: the API's group commit, which
answers HTTP requests) before a background writer (a compile worker's round), as long as the
background writer has not waited ``patience`` seconds; after that it goes next. Why not plain
first come, first served: in the embedded server (API and worker in one process, one GIL)
taking turns one for one gains no parallelism, and split the worker's validation rounds into
many small ones that cost more per update (fewer updates per second end to end). With the API
first, a burst is accepted quickly and the worker's rounds gather what queued meanwhile; the
patience bound keeps compiles running under a sustained load.

Reentrant (a nested write in one thread does not wait for itself), and bounded: ``acquire``
returns False after ``timeout`` seconds, as SQLite's busy timeout would have failed.
"""

from __future__ import annotations

import threading
import time

#: how long a background writer gives way to urgent ones before it goes next (seconds)
DEFAULT_PATIENCE_S = 0.25


class WriteGate:
    """One holder at a time; urgent writers first, background writers after ``patience``."""

    def __init__(self, patience: float = DEFAULT_PATIENCE_S) -> None:
        self.patience = patience
        self._cond = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0
        self._urgent_waiting = 0
        self._background_waiting = 0
        #: background writers that have waited ``patience`` and go before urgent ones
        self._overdue = 0

    def acquire(self, *, urgent: bool, timeout: float) -> bool:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return True
            now = time.monotonic()
            deadline = now + timeout
            overdue_at = now + self.patience
            is_overdue = False
            if urgent:
                self._urgent_waiting += 1
            else:
                self._background_waiting += 1
            try:
                while True:
                    if self._owner is None and self._my_turn(urgent, is_overdue):
                        self._owner, self._depth = me, 1
                        return True
                    now = time.monotonic()
                    if now >= deadline:
                        return False
                    if not urgent and not is_overdue and now >= overdue_at:
                        is_overdue = True
                        self._overdue += 1
                        continue
                    wake_at = deadline if urgent or is_overdue else min(deadline, overdue_at)
                    self._cond.wait(wake_at - now)
            finally:
                if urgent:
                    self._urgent_waiting -= 1
                else:
                    self._background_waiting -= 1
                if is_overdue:
                    self._overdue -= 1
                self._cond.notify_all()  # who may go has changed

    def waiting(self) -> tuple[int, int]:
        """How many urgent and background writers wait now (for tests and diagnostics)."""
        with self._cond:
            return self._urgent_waiting, self._background_waiting

    def _my_turn(self, urgent: bool, overdue: bool) -> bool:
        if urgent:
            return self._overdue == 0
        return overdue or self._urgent_waiting == 0

    def release(self) -> None:
        with self._cond:
            if self._owner != threading.get_ident():
                raise RuntimeError("the write gate is released by a thread that does not hold it")
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()
