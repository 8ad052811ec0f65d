"""Compile locks: one exporting compile per environment, and validations that never overlap.

Why: exporting compiles of one environment must not overlap (each export is based on the
latest version, and a claimed request must be run by exactly one worker). Validation compiles
may run side by side, in several threads and processes, as long as their selections share no
instance: a validation reads the others' attribute sets and may allocate values, which must
look as if the validations had run one after the other.

PostgreSQL gives both with session-level advisory locks held on a dedicated connection for
the compile's duration; a worker that dies releases them with its connection. SQLite has one
worker process (``lsm.services.singleton``), where thread locks are the same guarantee. The
statements are in ``lsm.store.advisory_locks``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence

from sqlalchemy import Connection

from lsm.store.advisory_locks import advisory_key, try_advisory_sets, unlock_advisory
from lsm.store.database import Database


class Held:
    """Locks taken together; ``release()`` (from the thread that took them) gives them back:
    the advisory keys first (on their connection), then the steps in reverse order."""

    def __init__(self, release: list[Callable[[], None]]) -> None:
        self._release = release
        #: PostgreSQL advisory keys held on ``_conn`` (session locks: only it can give them back)
        self.advisory: list[int] = []
        self._conn: Connection | None = None

    def release(self) -> None:
        undo, self._release = self._release, []
        keys, self.advisory = self.advisory, []
        try:
            if keys and self._conn is not None:
                _unlock(self._conn, keys)
        finally:
            for step in reversed(undo):
                step()


class SelectionLocks:
    """The instance locks of one validation batch, on one connection: ``try_lock_many`` the
    selections of a round, ``release`` them all when the round is done."""

    def __init__(self, owner: EnvironmentLocks, env_id: str) -> None:
        self._owner = owner
        self._kind = f"lsm-select:{env_id}"
        self._held: list[Held] = []
        self._conn: Connection | None = None

    def try_lock_many(self, selections: Sequence[Iterable[str]]) -> list[bool]:
        """Lock each selection whole or not at all; whether each was locked, in order. On
        PostgreSQL the whole round is one statement (two when some selection is held elsewhere)."""
        names = [sorted(set(ids)) for ids in selections]
        if self._conn is None and not self._owner.db.is_sqlite and names:
            self._conn = self._owner._lock_connection()
        held = self._owner._try_many(self._kind, names, self._owner._selected, self._conn)
        self._held.extend(h for h in held if h is not None)
        return [h is not None for h in held]

    def release(self) -> None:
        """Give every selection back: on PostgreSQL one statement for all their keys."""
        try:
            _release_together(self._held, self._conn)
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
        return self._try_many(kind, [names], taken, conn)[0]

    def _try_many(
        self, kind: str, sets: list[list[str]], taken: set[str], conn: Connection | None
    ) -> list[Held | None]:
        """Each set all or nothing: in process first (threads), then, for the sets that got that
        far, on PostgreSQL across processes, every set in one statement.

        A set that overlaps an earlier set of the same call is refused, whether that one was
        taken or not (a validation round's order: a selection that waits makes every later one
        that overlaps it wait), so the outcome is the same on both backends.
        """
        keys = [[f"{kind}:{n}" for n in names] for names in sets]
        inside: list[bool] = []
        asked: set[str] = set()
        with self._guard:
            for mine in keys:
                free = not any(k in taken or k in asked for k in mine)
                asked.update(mine)
                if free:
                    taken.update(mine)
                inside.append(free)

        def give_back(mine: list[str]) -> Callable[[], None]:
            def undo() -> None:
                with self._guard:
                    taken.difference_update(mine)

            return undo

        held: list[Held | None] = [
            Held([give_back(mine)]) if ok else None for mine, ok in zip(keys, inside, strict=True)
        ]
        wanted = [i for i, h in enumerate(held) if h is not None and keys[i]]
        if conn is None or not wanted:
            return held
        advisory = {i: [advisory_key(kind, n) for n in sets[i]] for i in wanted}
        try:
            got = try_advisory_sets(conn, [advisory[i] for i in wanted])
        except BaseException:
            for h in held:
                if h is not None:
                    h.release()
            raise
        for i, ok in zip(wanted, got, strict=True):
            h = held[i]
            assert h is not None
            if not ok:
                h.release()
                held[i] = None
                continue
            h.advisory, h._conn = advisory[i], conn
        return held


def _release_together(held: list[Held], conn: Connection | None) -> None:
    """Give back many ``Held`` of one connection: their advisory keys in one statement, then the
    in-process part of each."""
    keys = [k for h in held for k in h.advisory]
    for h in held:
        h.advisory = []  # given back below, all in one statement
    try:
        if conn is not None and keys:
            _unlock(conn, keys)
    finally:
        for h in reversed(held):
            h.release()


def _unlock(conn: Connection, keys: list[int]) -> None:
    """Give ``keys`` back; when that fails, the connection is discarded, not pooled: its session
    ends on the server, and its locks with it (a pooled one would keep holding them)."""
    try:
        unlock_advisory(conn, keys)
    except BaseException:
        conn.invalidate()
        raise
