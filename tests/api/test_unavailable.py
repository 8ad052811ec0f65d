"""A request that meets a dead database connection is a 503 with ``Retry-After``, never a 500.

On PostgreSQL the request's own backend is really ended (``pg_terminate_backend``) between its
transaction's start and its statement; on SQLite the transient failure there is a lock wait
given up ("database is locked"). The next request is served on a fresh connection. A database
error that is not transient stays a 500: the mapping must not hide bugs.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event, text

from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from tests.api.input_fixtures import served_box

BOX = "/lsm/v1/service_inventory/box"


@pytest.fixture
def served(db: Database) -> Iterator[tuple[ApiRuntime, httpx.Client]]:
    with served_box(db) as pair:
        yield pair


@contextmanager
def connection_lost_once(db: Database, *, error: Exception | None = None) -> Iterator[list[str]]:
    """The next statement on ``db``'s read engine that reads the instance table loses its
    connection (PostgreSQL: its backend is terminated; else ``error`` is raised); the
    statements that met it."""
    met: list[str] = []

    def fail(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if met or "lsm_instance" not in statement:
            return
        met.append(statement)
        if error is not None:
            raise error
        pid = conn.connection.dbapi_connection.info.backend_pid
        admin = Database(db.url)  # a pool of its own: never the connection it ends
        try:
            with admin.write_engine.connect() as own:
                # the two-argument form waits until the backend is gone
                ended = own.execute(text("SELECT pg_terminate_backend(:pid, 30000)"), {"pid": pid}).scalar()
                assert ended
        finally:
            admin.dispose()

    event.listen(db.read_engine, "before_cursor_execute", fail)
    try:
        yield met
    finally:
        event.remove(db.read_engine, "before_cursor_execute", fail)


def test_a_request_on_a_dead_connection_is_a_503_with_retry_after_and_the_next_is_served(
    served: tuple[ApiRuntime, httpx.Client], db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    engine, http = served
    assert http.post(BOX, json={"attributes": {"name": "a"}}).status_code == 200
    lost = None if not db.is_sqlite else sqlite3.OperationalError("database is locked")
    with caplog.at_level(logging.WARNING), connection_lost_once(engine.db, error=lost) as met:
        answer = http.get(BOX)
    assert met, "no request met the lost connection"
    assert answer.status_code == 503, answer.text
    assert int(answer.headers["Retry-After"]) >= 1
    body = answer.json()
    assert body["error"] == "unavailable" and body["retry_after"] == int(answer.headers["Retry-After"])
    assert "Traceback" not in answer.text
    # one line in the server's log, no traceback: an operational event, not a bug
    assert any("answered 503" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    again = http.get(BOX)
    assert again.status_code == 200 and [i["active_attributes"]["name"] for i in again.json()] == ["a"]


def test_a_database_error_that_is_not_transient_stays_a_500(
    served: tuple[ApiRuntime, httpx.Client], db: Database
) -> None:
    if not db.is_sqlite:
        pytest.skip("the SQLite driver's error for a missing table is the example")
    engine, http = served
    with connection_lost_once(engine.db, error=sqlite3.OperationalError("no such table: lsm_instance")):
        answer = http.get(BOX)
    assert answer.status_code == 500 and answer.json()["error"] == "internal", answer.text
    assert "Retry-After" not in answer.headers
