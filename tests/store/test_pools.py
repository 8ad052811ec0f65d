"""Bounded connection pools and the deployment's connection budget (``lsm.store.pools``).

A process never holds more PostgreSQL connections than its ``db_pool`` ceiling; a request that
finds none free waits ``db_pool.timeout`` and is answered 503 with ``Retry-After``, not a 500;
and a process that would take its deployment past the budget refuses to start, naming the
numbers. The budget counts the live processes that ``pg_stat_activity`` shows for the same
deployment (schema), so a killed process stops counting by itself.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from lsm.errors import ConfigurationError
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.pools import PoolConfig, PoolLimits, application_name, parse_application_name
from tests.api.input_fixtures import served_box
from tests.conftest import POSTGRES_URL

needs_postgres = pytest.mark.skipif(POSTGRES_URL is None, reason="needs LSM_TEST_POSTGRES_URL (PostgreSQL)")


@given(st.integers(1, 1000), st.integers(1, 1000))
def test_a_pool_never_opens_more_than_its_share_of_the_ceiling(write: int, read: int) -> None:
    limits = PoolLimits(write=write, read=read, timeout=1.0)
    for kind, size in (("write", write), ("read", read)):
        options = limits.engine_options(kind)
        assert options["pool_size"] >= 1
        assert options["pool_size"] + options["max_overflow"] == size
        assert options["pool_timeout"] == 1.0
    assert limits.total == write + read


@given(st.text(min_size=0, max_size=80), st.integers(2, 2000), st.text(max_size=60))
def test_a_connection_name_fits_postgres_and_names_its_holder(role: str, total: int, schema: str) -> None:
    limits = PoolLimits(write=total // 2, read=total - total // 2)
    name = application_name(role, limits, schema or None)
    assert len(name) <= 63  # PostgreSQL keeps NAMEDATALEN - 1 characters
    holder = parse_application_name(name)
    assert holder is not None and holder.ceiling == total
    assert application_name(role, limits, schema or None) != name  # one holder per Database


def test_names_of_other_clients_are_not_holders() -> None:
    assert parse_application_name("psql") is None
    assert parse_application_name("lsm:server:1.1:x:abc") is None
    assert parse_application_name("lsm:server:1.1:20") is None


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    assert POSTGRES_URL is not None
    admin = Database(POSTGRES_URL)
    try:
        with admin.write_engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    finally:
        admin.dispose()


def _holding(schema: str, role: str, write: int, read: int) -> Database:
    """A database whose pool holds one open connection, so that ``pg_stat_activity`` shows it."""
    assert POSTGRES_URL is not None
    db = Database(POSTGRES_URL, schema=schema, pools=PoolLimits(write=write, read=read), role=role)
    with db.write_engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return db


@needs_postgres
def test_a_process_past_the_budget_refuses_to_start_naming_the_numbers(schema: str) -> None:
    running = _holding(schema, "lsm-worker", 6, 6)
    starting = _holding(schema, "lsm-server", 4, 4)
    try:
        assert starting.check_budget(PoolConfig(budget=20)) is not None  # 12 + 8 fits 20
        with pytest.raises(ConfigurationError) as refused:
            starting.check_budget(PoolConfig(budget=19))
        message = str(refused.value)
        assert "db_pool.budget" in message and "19" in message and "20" in message
        assert "lsm-worker" in message and ": 12" in message
    finally:
        running.dispose()
        starting.dispose()


@needs_postgres
def test_a_disposed_process_and_another_deployment_do_not_count(schema: str) -> None:
    other_schema = f"t_{uuid.uuid4().hex[:16]}"
    elsewhere = _holding(other_schema, "lsm-worker", 50, 50)
    gone = _holding(schema, "lsm-worker", 50, 50)
    gone.dispose()  # its connections close, as a killed process's do
    starting = _holding(schema, "lsm-server", 4, 4)
    try:
        use = starting.check_budget(PoolConfig(budget=10))
        assert use is not None and use.total == 8 and use.others == ()
    finally:
        elsewhere.dispose()
        starting.dispose()


@needs_postgres
def test_a_budget_over_the_server_limit_is_refused(schema: str) -> None:
    starting = _holding(schema, "lsm-server", 2, 2)
    try:
        with starting.write_engine.connect() as conn:
            limit = int(conn.execute(text("SHOW max_connections")).scalar_one())
        with pytest.raises(ConfigurationError, match="max_connections"):
            starting.check_budget(PoolConfig(budget=limit + 1))
        default = starting.check_budget(PoolConfig())
        assert default is not None and default.budget < default.server_limit <= limit
    finally:
        starting.dispose()


@pytest.fixture
def tight(db: Database) -> Iterator[Database]:
    """The test's database with one write and one read connection, waiting 0.2 s for either."""
    if db.is_sqlite:
        pytest.skip("SQLite has no connection limit: its pools are not bounded")
    tight = Database(db.url, schema=db.schema, pools=PoolLimits(write=1, read=1, timeout=0.2))
    yield tight
    tight.dispose()


def test_a_request_that_finds_no_free_connection_is_a_503_then_served(tight: Database) -> None:
    box = "/lsm/v1/service_inventory/box"
    runtime: ApiRuntime
    with served_box(tight) as (runtime, http):
        assert http.get(box).status_code == 200
        held = threading.Event()
        release = threading.Event()

        def hold_the_read_connection() -> None:
            with tight.read() as session:
                session.execute(text("SELECT 1"))
                held.set()
                release.wait(30)

        holder = threading.Thread(target=hold_the_read_connection)
        holder.start()
        try:
            assert held.wait(30)
            busy = http.get(box)
        finally:
            release.set()
            holder.join(30)
        assert busy.status_code == 503, busy.text
        assert int(busy.headers["Retry-After"]) >= 1 and busy.json()["error"] == "unavailable"
        assert "Traceback" not in busy.text
        served = http.get(box)
        assert served.status_code == 200 and isinstance(served.json(), list)
        assert isinstance(runtime, ApiRuntime)


@needs_postgres
def test_a_server_over_the_budget_stops_before_it_touches_the_schema() -> None:
    from lsm.runtime.config import ServerConfig
    from lsm.runtime.wiring import build_api

    assert POSTGRES_URL is not None
    runtime = build_api(ServerConfig(database_url=POSTGRES_URL, db_pool=PoolConfig(budget=1_000_000)))
    try:
        with pytest.raises(ConfigurationError, match=r"db_pool\.budget"):
            runtime.start()
        assert not runtime.ready
    finally:
        runtime.stop()
