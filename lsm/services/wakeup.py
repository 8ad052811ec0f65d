"""``Listener``: wake the service loop when another process queues work (PostgreSQL LISTEN).

Why: in one process the orchestration wakes the worker directly; across processes (an API
server and several ``lsm worker``) a worker would otherwise only find new requests at its next
poll. ``lsm.inventory.compile_requests.enqueue`` sends ``NOTIFY lsm_work`` in the transaction
that queues a request, delivered when it commits; every listening worker wakes at once.
Polling stays as the fallback (a lost connection is re-opened with a back-off).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.engine import make_url

from lsm.inventory.compile_requests import NOTIFY_CHANNEL
from lsm.inventory.database import Database

log = logging.getLogger(__name__)


class Listener:
    def __init__(self, db: Database, wake: Callable[[str | None], None]) -> None:
        self.db = db
        self.wake = wake
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lsm-listen", daemon=True)
        self.connected = threading.Event()

    def start(self) -> None:
        if not self.db.is_sqlite:
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
            except Exception:
                self.connected.clear()
                if self._stop.is_set():
                    return
                log.warning("LISTEN connection lost; polling until it is back", exc_info=True)
                self._stop.wait(delay)
                delay = min(delay * 2, 10.0)
