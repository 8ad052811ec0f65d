"""SQLite WAL checkpoints run in a thread of their own, not in the committing writer
(``lsm.store.checkpoint``).

What a checkpoint did is read off the database *file*: a copy of it taken without its ``-wal``
holds exactly the rows that were copied back into it. SQLite only (PostgreSQL has no WAL file of
ours to checkpoint).
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsm.store import checkpoint as checkpoint_module
from lsm.store import database as database_module
from lsm.store.checkpoint import Checkpointer
from lsm.store.database import Database
from tests.waiting import wait_until

#: rows of 4 KB each: one page per row at least
ROW = "x" * 4000


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "wal.db"


def _database(path: Path) -> Database:
    database = Database(f"sqlite:///{path}")
    with database.write() as session:
        session.connection().exec_driver_sql("CREATE TABLE t (x TEXT)")
    return database


@pytest.fixture
def db(path: Path) -> Iterator[Database]:
    database = _database(path)
    try:
        yield database
    finally:
        database.dispose()


def _write(db: Database, rows: int, per_transaction: int = 100) -> None:
    for start in range(0, rows, per_transaction):
        with db.write() as session:
            session.connection().exec_driver_sql(
                "INSERT INTO t (x) VALUES (?)", [(ROW,)] * min(per_transaction, rows - start)
            )


def _rows_in_the_file(path: Path, tmp_path: Path) -> int:
    """Rows of ``t`` in the database file alone (its WAL left out)."""
    copy = tmp_path / "file-only.db"
    shutil.copyfile(path, copy)
    conn = sqlite3.connect(copy)
    try:
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        conn.close()


def _no_checkpointer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Checkpointer, "poke", lambda self: None)


def test_the_checkpointer_copies_what_was_committed_into_the_database_file(
    db: Database, path: Path, tmp_path: Path
) -> None:
    assert db.checkpointer is not None
    _write(db, 1500)
    checkpointer = db.checkpointer
    wait_until(checkpointer.caught_up, "the checkpointer copied every WAL frame")
    assert checkpointer.runs >= 1
    assert _rows_in_the_file(path, tmp_path) == 1500


def test_a_committing_writer_no_longer_checkpoints_at_sqlites_default_1000_pages(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = _database(path)
    try:
        assert db.checkpointer is not None
        wait_until(db.checkpointer.caught_up, "the empty table is in the file")
        _no_checkpointer(monkeypatch)
        _write(db, 1500)  # 1,500 pages and more: SQLite's writer would have checkpointed by now
        assert _rows_in_the_file(path, tmp_path) == 0  # every row is still in the WAL only
        with db.read() as session:  # and readable, of course
            assert session.connection().exec_driver_sql("SELECT count(*) FROM t").scalar() == 1500
    finally:
        db.dispose()


def test_past_its_own_threshold_a_writer_still_checkpoints(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The safety net: a checkpointer that fell behind (here: none) leaves the WAL bounded."""
    monkeypatch.setattr(database_module, "WRITER_CHECKPOINT_PAGES", 200)
    db = _database(path)
    try:
        assert db.checkpointer is not None
        wait_until(db.checkpointer.caught_up, "the empty table is in the file")
        _no_checkpointer(monkeypatch)
        _write(db, 600)
        assert _rows_in_the_file(path, tmp_path) >= 400  # copied by the writers themselves
    finally:
        db.dispose()


def _checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "lsm-wal-checkpoint" and t.is_alive()]


def test_the_thread_ends_when_idle_and_the_next_commit_starts_another(
    db: Database, path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint_module, "IDLE_S", 0.05)
    checkpointer = db.checkpointer
    assert checkpointer is not None
    before = len(_checkpoint_threads())
    _write(db, 10)
    wait_until(lambda: checkpointer._thread is None, "the idle checkpointer ended")
    assert len(_checkpoint_threads()) <= before
    runs = checkpointer.runs
    _write(db, 10)
    wait_until(lambda: checkpointer.runs > runs and checkpointer.caught_up(), "a new thread checkpointed")
    assert _rows_in_the_file(path, tmp_path) == 20


def test_dispose_stops_the_thread_and_a_reused_database_checkpoints_again(
    db: Database, path: Path, tmp_path: Path
) -> None:
    checkpointer = db.checkpointer
    assert checkpointer is not None
    _write(db, 10)
    thread = checkpointer._thread
    db.dispose()
    assert checkpointer._thread is None
    assert thread is None or not thread.is_alive()
    _write(db, 10)  # engines reconnect after dispose; so does the checkpointer
    wait_until(lambda: checkpointer.caught_up() and checkpointer._thread is not None, "checkpointed again")
    wait_until(lambda: _rows_in_the_file(path, tmp_path) == 20, "both writes in the file")
