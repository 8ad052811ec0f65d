"""``Listener``: wake the service loop when another process queues work.

Why: in one process the orchestration wakes the worker directly; across processes (an API
server and several ``lsm worker``) a worker would otherwise only find new requests at its next
poll (a second by default: under a burst, a second of idle pipeline per wake-up).

* PostgreSQL: ``lsm.store.compiles.requests.enqueue`` sends ``NOTIFY lsm_work`` in the
  transaction that queues a request, delivered when it commits; every listening worker wakes
  at once. A lost connection is re-opened with a back-off; polling covers the gap.
* SQLite (``sqlite_watch``, for ``lsm worker`` / ``lsm agent`` beside ``lsm server
  --no-worker``): there is no notification channel, but ``PRAGMA data_version`` changes
  whenever another connection commits. A thread reads it every ``SQLITE_WATCH_S`` (a few
  microseconds, no table is read) and wakes the loop when it moved. The embedded server does not
  need it: its own writes wake its loop in process.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

from sqlalchemy.engine import make_url

from lsm.store.compiles.requests import NOTIFY_CHANNEL
from lsm.store.database import Database
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

#: seconds between two reads of SQLite's ``data_version`` (the wake-up delay it adds, at most)
SQLITE_WATCH_S = 0.02


class Listener:
    def __init__(
        self, db: Database, wake: Callable[[str | None], None], *, sqlite_watch: bool = False
    ) -> None:
        self.db = db
        self.wake = wake
        self._stop = threading.Event()
        target = self._watch_sqlite if db.is_sqlite else self._run
        self._thread = threading.Thread(target=target, name="lsm-listen", daemon=True)
        self._enabled = sqlite_watch or not db.is_sqlite
        self.connected = threading.Event()

    def start(self) -> None:
        if self._enabled:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def _run(self) -> None:
        import psycopg

        url = make_url(self.db.url).set(drivername="postgresql")
        conninfo = url.render_as_string(hide_password=False)
        options = f"-csearch_path={self.db.schema}" if self.db.schema else None
        delay = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(conninfo, autocommit=True, options=options) as conn:
                    conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self.connected.set()
                    delay = 0.5
                    self.wake(None)  # anything queued while we were not listening
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=1.0):
                            self.wake(note.payload or None)
            except Exception as exc:
                self.connected.clear()
                if self._stop.is_set():
                    return
                log_failure(log, exc, "LISTEN connection lost; polling until it is back")
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)

    def _watch_sqlite(self) -> None:
        """Wake the loop whenever another connection committed (``PRAGMA data_version``)."""
        path = make_url(self.db.url).database
        if not path or path == ":memory:":
            return  # an in-memory database has no other process
        delay = 0.5
        while not self._stop.is_set():
            try:
                connection = sqlite3.connect(path, check_same_thread=False)  # it only reads a pragma
                try:
                    last = connection.execute("PRAGMA data_version").fetchone()[0]
                    self.connected.set()
                    delay = 0.5
                    self.wake(None)  # anything committed before we watched
                    while not self._stop.wait(SQLITE_WATCH_S):
                        version = connection.execute("PRAGMA data_version").fetchone()[0]
                        if version != last:
                            last = version
                            self.wake(None)
                finally:
                    connection.close()
            except sqlite3.Error:
                self.connected.clear()
                if self._stop.is_set():
                    return
                log.warning("cannot watch the SQLite file for changes; polling", exc_info=True)
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)
