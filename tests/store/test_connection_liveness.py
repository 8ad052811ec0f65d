"""A pooled PostgreSQL connection the server closed is replaced at checkout, without a ping
(``lsm.store.database``): the next transaction of either engine runs on a new connection."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text

from lsm.store.database import Database


def _backend_pid(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())


@pytest.mark.parametrize("which", ["write", "read"])
def test_a_terminated_connection_is_replaced_at_checkout(db: Database, which: str) -> None:
    if db.is_sqlite:
        pytest.skip("PostgreSQL connections only")
    engine = db.write_engine if which == "write" else db.read_engine
    engine.dispose()  # one pooled connection: the next checkout gets it back
    first = _backend_pid(engine)
    admin = Database(db.url, schema=db.schema)  # its own pool: never the connection it ends
    try:
        with admin.write_engine.connect() as conn:
            # the two-argument form waits until the backend is gone
            assert conn.execute(text("SELECT pg_terminate_backend(:pid, 30000)"), {"pid": first}).scalar()
    finally:
        admin.dispose()
    with (db.write if which == "write" else db.read)() as session:
        second = int(session.connection().execute(text("SELECT pg_backend_pid()")).scalar_one())
    assert second != first
