"""After a bulk plan, PostgreSQL gets statistics for the agents' keyed reads; SQLite needs none."""

from __future__ import annotations

from sqlalchemy import text

from lsm.store.database import Database
from lsm.store.deploy.plan import refresh_statistics


def _analyze_count(db: Database) -> int:
    with db.read() as session:
        found = session.connection().execute(
            text(
                "SELECT analyze_count FROM pg_stat_user_tables "
                "WHERE relname = 'lsm_resource_require' AND schemaname = :schema"
            ),
            {"schema": db.schema or "public"},
        )
        return int(found.scalar_one())


def test_statistics_are_refreshed_on_postgresql_only(db: Database) -> None:
    if db.is_sqlite:
        with db.write() as session:
            assert refresh_statistics(session.connection()) is False
        return
    before = _analyze_count(db)
    with db.write() as session:
        assert refresh_statistics(session.connection()) is True
    # the statistics collector reports asynchronously: a bounded wait for the count to move
    for _ in range(100):
        if _analyze_count(db) > before:
            break
        with db.read() as session:
            session.connection().exec_driver_sql("SELECT pg_sleep(0.05)")
    assert _analyze_count(db) > before
