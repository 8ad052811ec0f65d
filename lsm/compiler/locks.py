"""``EnvironmentLocks``: at most one compile runs per environment, across every worker process.

Why: compiles of one environment must not overlap (each export is based on the latest
version, and a claimed request must be run by exactly one worker). PostgreSQL gives this with
a session-level advisory lock held on a dedicated connection for the compile's duration; a
worker that dies releases it with its connection, which is what lets the queue resume. SQLite
is embedded in one process, where a per-environment thread lock is the same guarantee.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text

from lsm.inventory.database import Database


def _key(env_id: str) -> int:
    """A stable signed 64-bit advisory-lock key for an environment."""
    return int.from_bytes(
        hashlib.blake2b(f"lsm-compile:{env_id}".encode(), digest_size=8).digest(), "big", signed=True
    )


class EnvironmentLocks:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._local: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, env_id: str) -> Iterator[bool]:
        """Try to take the environment's compile lock; yields whether it was taken."""
        with self._guard:
            local = self._local.setdefault(env_id, threading.Lock())
        if not local.acquire(blocking=False):
            yield False
            return
        try:
            if self.db.is_sqlite:
                yield True
                return
            with self.db.write_engine.connect() as conn:
                got = bool(
                    conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _key(env_id)}).scalar()
                )
                conn.commit()
                try:
                    yield got
                finally:
                    if got:
                        conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _key(env_id)})
                        conn.commit()
        finally:
            local.release()
