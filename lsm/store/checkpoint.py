"""SQLite WAL checkpoints in a thread of their own, outside the write lock.

Why: in WAL mode a commit appends pages to the ``-wal`` file; once that file holds more than
``wal_autocheckpoint`` pages (1,000 by default), the committing connection copies them back
into the database file and syncs it, before its commit returns and so while it still holds
the database's one write lock. Under a burst that was a sizeable part of every write
transaction's hold in both the API and the compile worker (timed with cProfile around each
write transaction), and every other writer waited for it. The copy needs no write lock:
SQLite lets a *passive* checkpoint run beside readers and a writer, copying what every reader
is done with.

So each process that writes starts one ``Checkpointer`` for its database: every committed
write transaction pokes it, and it runs ``PRAGMA wal_checkpoint(PASSIVE)`` on a connection of
its own, pokes that came meanwhile folded into one. The writers' own threshold is raised to
``WRITER_CHECKPOINT_PAGES`` rather than turned off: if this thread ever falls far behind (or
is gone), a writer still checkpoints, so the WAL stays bounded as before. Once a passive
checkpoint has copied everything, the next writer starts the WAL file over from its beginning,
as it did after its own checkpoints.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger(__name__)

#: pages after which a committing writer checkpoints itself (the safety net; 4 KB pages: 40 MB)
WRITER_CHECKPOINT_PAGES = 10_000

#: the thread ends (and closes its connection) after this many seconds without a commit; the
#: next commit starts another: an idle process, or a test's database, keeps no thread
IDLE_S = 5.0


class Checkpointer:
    """One thread that checkpoints ``path``'s WAL after it is poked (see the module docstring)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._poked = threading.Event()
        self._stop = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: checkpoints run, and the last one's (WAL frames, frames copied) (tests, diagnostics)
        self.runs = 0
        self.last: tuple[int, int] | None = None
        self._pokes = 0
        self._covered = 0

    def poke(self) -> None:
        """A write transaction committed: checkpoint soon (starts the thread when none runs)."""
        with self._lock:
            if self._stop:
                return
            self._pokes += 1
            self._poked.set()
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="lsm-wal-checkpoint", daemon=True)
                self._thread.start()

    def caught_up(self) -> bool:
        """Whether a checkpoint started after the latest commit has ended, having copied the
        whole WAL (for tests and diagnostics)."""
        with self._lock:
            pokes = self._pokes
        last = self.last
        return self._covered == pokes and last is not None and last[0] == last[1]

    def close(self) -> None:
        """Stop the thread after the checkpoint it runs, if any, and close its connection (the
        database's ``dispose``); a later commit starts a new one, as engines reconnect."""
        with self._lock:
            self._stop = True
            thread = self._thread
            self._poked.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._lock:
            self._stop = False
            self._thread = None
            self._poked.clear()

    def _loop(self) -> None:
        try:
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            log.exception("WAL checkpoints: cannot open %s; writers checkpoint themselves", self.path)
            with self._lock:
                self._thread = None
            return
        try:
            connection.execute("PRAGMA busy_timeout=0")  # passive: never wait for anyone
            while True:
                if not self._poked.wait(IDLE_S):
                    with self._lock:  # a poke sets the event under this lock: none is lost
                        if not self._poked.is_set():
                            self._thread = None
                            return
                    continue
                with self._lock:
                    self._poked.clear()
                    pokes = self._pokes
                if self._stop:
                    return
                self._checkpoint(connection)
                self._covered = pokes
        finally:
            connection.close()

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        try:
            row = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError:  # another process's checkpoint runs: it does the work
            return
        except sqlite3.Error:
            log.exception(
                "WAL checkpoint of %s failed; writers checkpoint themselves past %d pages",
                self.path,
                WRITER_CHECKPOINT_PAGES,
            )
            return
        self.runs += 1
        if row is not None and row[1] >= 0:  # -1: not in WAL mode, or blocked
            self.last = (int(row[1]), int(row[2]))


__all__ = ["WRITER_CHECKPOINT_PAGES", "Checkpointer"]
