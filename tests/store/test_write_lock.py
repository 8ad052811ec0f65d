"""SQLite write transactions wait for the write lock in short steps (``begin_immediate``).

The waiting itself is a matter of speed (see the function's docstring); what is tested here is
what must hold whatever the timing: the lock is taken once it is free, a lock held past the
timeout ends in SQLite's own "database is locked" error, any other error is not retried, and
the connection keeps its busy timeout for every other statement either way.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsm.store.database import BUSY_TIMEOUT_S, Database, begin_immediate

Pair = tuple[sqlite3.Connection, sqlite3.Connection]


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    path = tmp_path / "lock.db"
    holder, waiter = _connect(path), _connect(path)
    holder.execute("CREATE TABLE t (x INTEGER)")
    yield holder, waiter
    holder.close()
    waiter.close()


def _busy_timeout_ms(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA busy_timeout").fetchone()[0])


def test_the_lock_is_taken_once_the_holder_commits(pair: Pair) -> None:
    holder, waiter = pair
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    waiting = threading.Event()
    done = threading.Event()
    errors: list[BaseException] = []

    def wait_for_lock() -> None:
        waiting.set()
        try:
            begin_immediate(waiter, BUSY_TIMEOUT_S)
            waiter.execute("INSERT INTO t VALUES (2)")
            waiter.execute("COMMIT")
        except BaseException as exc:  # reported below, not swallowed
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=wait_for_lock)
    thread.start()
    waiting.wait()
    assert not done.wait(0.05), "the waiter wrote while the holder still had the write lock"
    holder.execute("COMMIT")
    thread.join()
    assert errors == []
    assert [r[0] for r in holder.execute("SELECT x FROM t ORDER BY x")] == [1, 2]
    assert _busy_timeout_ms(waiter) == int(BUSY_TIMEOUT_S * 1000)


def test_a_lock_held_past_the_timeout_is_sqlites_own_error(pair: Pair) -> None:
    holder, waiter = pair
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="database is locked") as raised:
        begin_immediate(waiter, 0.05)
    assert raised.value.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
    assert not waiter.in_transaction
    assert _busy_timeout_ms(waiter) == 50  # other statements keep waiting on SQLite's handler
    holder.execute("ROLLBACK")


def test_other_errors_are_not_retried(pair: Pair) -> None:
    _, waiter = pair
    waiter.execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError, match="within a transaction"):
        begin_immediate(waiter, BUSY_TIMEOUT_S)
    assert _busy_timeout_ms(waiter) == int(BUSY_TIMEOUT_S * 1000)
    waiter.execute("ROLLBACK")


def test_write_transactions_of_two_databases_on_one_file_take_turns(tmp_path: Path) -> None:
    """Two ``Database`` objects on one file stand for two processes: every write lands once."""
    from sqlalchemy import text

    url = f"sqlite:///{tmp_path / 'turns.db'}"
    first, second = Database(url), Database(url)
    with first.write() as session:
        session.execute(text("CREATE TABLE n (writer TEXT, i INTEGER)"))
    errors: list[BaseException] = []

    def write(db: Database, name: str) -> None:
        try:
            for i in range(50):
                with db.write() as session:
                    session.execute(text("INSERT INTO n VALUES (:w, :i)"), {"w": name, "i": i})
        except BaseException as exc:  # reported below, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(db, name)) for db, name in ((first, "a"), (second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with second.read() as session:
        rows = session.execute(text("SELECT writer, count(*) FROM n GROUP BY writer ORDER BY writer")).all()
    assert [tuple(r) for r in rows] == [("a", 50), ("b", 50)]
    first.dispose()
    second.dispose()
