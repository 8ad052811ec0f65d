"""SQLite allows one compile worker process: a second is refused with a message naming the first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lsm.services.singleton import NAME, AnotherWorkerRunning, hold_sqlite_worker
from lsm.store.database import Database
from lsm.store.tables import LeaseRow


@pytest.fixture
def sqlite(tmp_path: Path) -> Database:
    database = Database(f"sqlite:///{tmp_path / 'lsm.db'}")
    database.create_schema()
    return database


def test_a_second_worker_is_refused_and_told_who_holds_the_database(sqlite: Database) -> None:
    first = hold_sqlite_worker(sqlite, "lsm-server")
    with pytest.raises(AnotherWorkerRunning) as refused:
        hold_sqlite_worker(sqlite, "lsm-worker")
    message = refused.value.message
    assert "lsm-server" in message and "PostgreSQL" in message
    first.release()
    hold_sqlite_worker(sqlite, "lsm-worker").release()  # free again once the first stopped


def test_the_lease_of_a_killed_worker_on_this_host_is_taken_over_at_once(sqlite: Database) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    pid = int(dead.stdout)  # that process has exited: its pid is gone
    first = hold_sqlite_worker(sqlite, "lsm-server")
    with sqlite.write() as session:
        row = session.get(LeaseRow, NAME)
        assert row is not None
        row.info = {**row.info, "pid": pid}  # as if a process killed with -9 had held it
        session.add(row)
    second = hold_sqlite_worker(sqlite, "lsm-worker")
    assert second.held
    assert not first.keep()


def test_a_second_lsm_worker_process_exits_with_the_reason(sqlite: Database, tmp_path: Path) -> None:
    held = hold_sqlite_worker(sqlite, "lsm-server")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "lsm.cli", "worker", "--database", sqlite.url],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    finally:
        held.release()
    assert result.returncode != 0
    assert "another compile worker already serves this SQLite database" in " ".join(result.stderr.split())
