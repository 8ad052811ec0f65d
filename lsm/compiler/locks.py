"""Compile locks: one exporting compile per environment, and validations that never overlap.

Why: exporting compiles of one environment must not overlap (each export is based on the
latest version, and a claimed request must be run by exactly one worker). Validation compiles
may run side by side, in several threads and processes, as long as their selections share no
instance: a validation reads the others' attribute sets and may allocate values, which must
look as if the validations had run one after the other.

PostgreSQL gives both with session-level advisory locks held on a dedicated connection for
the compile's duration; a worker that dies releases them with its connection. SQLite has one
worker process (``lsm.services.singleton``), where thread locks are the same guarantee. The
statements are in ``lsm.inventory.advisory_locks``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from sqlalchemy import Connection

from lsm.inventory.advisory_locks import advisory_key, try_advisory, unlock_advisory
from lsm.inventory.database import Database


class Held:
    """Locks taken together; ``release()`` (from the thread that took them) gives them back."""

    def __init__(self, release: list[Callable[[], None]]) -> None:
        self._release = release

    def release(self) -> None:
        undo, self._release = self._release, []
        for step in reversed(undo):
            step()


class SelectionLocks:
    """The instance locks of one validation batch, on one connection: ``try_lock`` a selection,
    ``release`` them all when the batch is done."""

    def __init__(self, owner: EnvironmentLocks, env_id: str) -> None:
        self._owner = owner
        self._kind = f"lsm-select:{env_id}"
        self._held: list[Held] = []
        self._conn: Connection | None = None

    def try_lock(self, instance_ids: Iterable[str]) -> bool:
        names = sorted(set(instance_ids))
        if self._conn is None and not self._owner.db.is_sqlite:
            self._conn = self._owner._lock_connection()
        held = self._owner._try(self._kind, names, self._owner._selected, self._conn)
        if held is None:
            return False
        self._held.append(held)
        return True

    def release(self) -> None:
        try:
            for held in reversed(self._held):
                held.release()
        finally:
            self._held = []
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class EnvironmentLocks:
    """``try_export(env_id)``: the environment's exporting lock, or ``None`` when another holds it.
    ``selections(env_id)``: the locks a validation batch takes on its selections."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._guard = threading.Lock()
        self._exporting: set[str] = set()
        self._selected: set[str] = set()

    def try_export(self, env_id: str) -> Held | None:
        if self.db.is_sqlite:
            return self._try("lsm-compile", [env_id], self._exporting, None)
        conn = self._lock_connection()
        held = self._try("lsm-compile", [env_id], self._exporting, conn)
        if held is None:
            conn.close()
            return None
        held._release.insert(0, conn.close)
        return held

    def selections(self, env_id: str) -> SelectionLocks:
        return SelectionLocks(self, env_id)

    def _lock_connection(self) -> Connection:
        """A pooled connection in autocommit: session locks need no transaction, so taking or
        giving back a set of locks is one round trip (no BEGIN, no COMMIT), and the connection is
        never left idle in a transaction while the compile runs."""
        return self.db.write_engine.connect().execution_options(isolation_level="AUTOCOMMIT")

    def _try(self, kind: str, names: list[str], taken: set[str], conn: Connection | None) -> Held | None:
        """In process first (threads), then on PostgreSQL across processes; all or nothing."""
        keys = [f"{kind}:{n}" for n in names]
        with self._guard:
            if any(k in taken for k in keys):
                return None
            taken.update(keys)

        def give_back() -> None:
            with self._guard:
                taken.difference_update(keys)

        if conn is None or not keys:
            return Held([give_back])
        advisory = [advisory_key(kind, n) for n in names]
        try:
            got = try_advisory(conn, advisory)
        except BaseException:
            give_back()
            raise
        if not got:
            give_back()
            return None

        def unlock() -> None:
            unlock_advisory(conn, advisory)

        return Held([give_back, unlock])
