"""Shared fixtures: a real database per test, on SQLite and, when configured, on PostgreSQL.

Every store test takes the ``db`` fixture and therefore runs against both backends when
``LSM_TEST_POSTGRES_URL`` is set (``.ci/run`` sets it when the server answers). Each PostgreSQL
test gets its own schema, dropped afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsm.inventory.database import Database
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api

POSTGRES_URL = os.environ.get("LSM_TEST_POSTGRES_URL")
#: names this test run for test models that keep state in files, which compile processes share
#: (set here, before any compile process starts, so that every one of them inherits it)
os.environ.setdefault("LSM_TEST_RUN", uuid.uuid4().hex[:12])
TEST_LIFECYCLES = str(Path(__file__).resolve().parent / "lifecycles")
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])
#: the test models every test engine offers by name (docs/api.md: models come from the operator)
TEST_MODELS = {
    name: f"tests.models.{name}"
    for name in ("things", "hang", "counters", "fragile", "shared_boxes", "claims", "blocking")
}


def make_database(backend: str, tmp_path: Path) -> Database:
    if backend == "sqlite":
        return Database(f"sqlite:///{tmp_path / 'lsm.db'}")
    assert POSTGRES_URL is not None
    return Database(POSTGRES_URL, schema=f"t_{uuid.uuid4().hex[:16]}")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(backend: str, tmp_path: Path) -> Iterator[Database]:
    """An empty database with the schema created, on each configured backend."""
    database = make_database(backend, tmp_path)
    database.create_schema()
    try:
        yield database
    finally:
        if not database.is_sqlite:
            database.drop_schema()
        database.dispose()


@pytest.fixture
def engine_factory(db: Database, tmp_path: Path) -> Iterator[Callable[..., ApiRuntime]]:
    """Build started engines over the test database (same backend as ``db``); they offer the
    test models by name and any model under the test's ``tmp_path``."""
    engines: list[ApiRuntime] = []

    def make(
        model: str | None = "tests.models.things",
        *,
        embedded_worker: bool = False,
        embedded_agent: bool = False,
        config: dict[str, Any] | None = None,
        **settings: Any,
    ) -> ApiRuntime:
        """Compiles run only when a test drains the queue, unless ``embedded_worker`` is set;
        ``embedded_agent`` adds a deploy agent to the same loop (test models without handlers
        leave it off); ``config``: more ``ServerConfig`` fields (``state_dir``...)."""
        server = ServerConfig(
            database_url=db.url,
            model=model,
            settings=settings,
            lifecycle_dirs=[TEST_LIFECYCLES],
            embedded_worker=embedded_worker,
            models=TEST_MODELS,
            model_dirs=[str(tmp_path)],
            embedded_agent=embedded_agent,
            **(config or {}),
        )
        engine = build_api(server, db=db)
        engine.start()
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.stop()  # the db fixture disposes of the database: the runtime did not open it


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    """A started engine with the ``tests.models.things`` model in the default environment."""
    return engine_factory()
