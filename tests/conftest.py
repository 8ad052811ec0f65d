"""Shared fixtures: a real database per test, on SQLite and, when configured, on PostgreSQL.

Every store test takes the ``db`` fixture and therefore runs against both backends when
``LSM_TEST_POSTGRES_URL`` is set (``.ci/run`` sets it when the server answers). Each PostgreSQL
test gets its own schema, dropped afterwards, so tests never see each other's rows.
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from tests.template_db import postgres_at_head, sqlite_at_head
from tests.tls import share_default_context

share_default_context()

POSTGRES_URL = os.environ.get("LSM_TEST_POSTGRES_URL")
#: names this test run for test models that keep state in files, which compile processes share
#: (set here, before any compile process starts, so that every one of them inherits it)
os.environ.setdefault("LSM_TEST_RUN", uuid.uuid4().hex[:12])
if (_worker := os.environ.get("PYTEST_XDIST_WORKER")) and not os.environ["LSM_TEST_RUN"].endswith(_worker):
    # pytest-xdist workers inherit the controller's run name: each names its own
    os.environ["LSM_TEST_RUN"] += f"-{_worker}"
    # pytest-xdist hands its workers the terminal's size as COLUMNS and LINES; the CLI's consoles
    # would take it as fixed when created, where the tests give the width per invocation
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)
TEST_LIFECYCLES = str(Path(__file__).resolve().parent / "lifecycles")
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES_URL else [])
#: the test models every test engine offers by name (docs/api.md: models come from the operator)
TEST_MODELS = {
    name: f"tests.models.{name}"
    for name in ("things", "hang", "counters", "fragile", "shared_boxes", "claims", "blocking")
}


def make_database(backend: str, tmp_path: Path) -> Database:
    """An empty database (no tables; on PostgreSQL a schema name not yet created): for the tests
    of schema creation and migrations. Others take ``database_at_head``."""
    if backend == "sqlite":
        return Database(f"sqlite:///{tmp_path / 'lsm.db'}")
    assert POSTGRES_URL is not None
    return Database(POSTGRES_URL, schema=f"t_{uuid.uuid4().hex[:16]}")


def database_at_head(backend: str, tmp_path: Path) -> Database:
    """A database with the schema at the newest revision, copied from a template
    (``tests.template_db``); the caller drops a PostgreSQL schema and disposes of it."""
    if backend == "sqlite":
        return Database(sqlite_at_head(tmp_path / "lsm.db"))
    assert POSTGRES_URL is not None
    return postgres_at_head(POSTGRES_URL)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(backend: str, tmp_path: Path) -> Iterator[Database]:
    """An empty database with the schema created, on each configured backend."""
    database = database_at_head(backend, tmp_path)
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


#: tests marked ``slow`` here rather than in their modules, so the fast set (``-m "not slow"``)
#: is defined in one place: each runs real processes, a browser, a property search over the
#: API or waits on purpose. A node id starting with one of these is slow.
SLOW = (
    "tests/runtime/test_agent_faults.py",  # agent processes killed with SIGKILL
    "tests/runtime/test_connection_loss.py",  # PostgreSQL connections cut under real processes
    "tests/runtime/test_halt_processes.py",  # API, worker and agent processes
    "tests/runtime/test_scale_out.py",  # several API and worker processes on one database
    "tests/runtime/test_worker_imports.py",  # fresh interpreters
    "tests/deploy/test_agent_processes.py",  # agent processes sharing the work
    "tests/services/test_singleton.py",  # worker processes contending for the lease
    "tests/console/test_browser.py",  # chromium
    "tests/console/test_operations_browser.py",  # chromium
    "tests/console/test_readable_browser.py",  # chromium
    "tests/console/test_disclosure_browser.py",  # chromium
    "tests/console/test_form_bounds_browser.py::test_the_order_form_checks",  # chromium
    "tests/services/test_scheduler.py",  # a cron schedule waited for in real time
    "tests/compiler/test_batched_validation.py",  # a property search over batched validation rounds
    "tests/compiler/test_compile_isolation.py",  # compile processes blocked, starved and killed
    "tests/examples/",  # the examples end to end, the Linux network lab
    "tests/handlers/test_netlab.py",  # network namespaces
    "tests/discovery/test_jail_e2e.py",  # an agent process in its jail
    "tests/api/test_openapi.py::test_every_answer_is_documented_and_never_a_server_error",  # schemathesis
    "tests/api/test_events.py::test_a_compile_finished_by_another_process",  # a worker process
    "tests/api/test_events.py::test_a_worker_in_another_process",  # a worker process
    "tests/test_benchmarks_smoke.py",  # the benchmarks, small
    "tests/test_export_bench.py",  # an lsm server and lsm export processes, small
    "tests/test_watch_bench.py",  # the watch benchmark, small
    "tests/test_cli_follow.py",  # a server process followed by the CLI
    "tests/test_stdlib_selectors.py",  # fresh interpreters
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the slow tests, and run them first.

    Why first: the slow tests take seconds to minutes each, the others a fraction of a second.
    With several pytest-xdist workers a long test handed out last keeps one worker busy while
    the others are idle; started first, the short ones fill in around them and the workers end
    together (the order within each group is kept).
    """
    for item in items:
        if item.nodeid.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


#: full collections at the end of the session before the survivors are frozen; pytest stops at
#: the same count (``gc_collect_harder``)
_FINAL_COLLECTIONS = 5


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Collect the garbage once more, then freeze what survives, so that the process exits
    within seconds of the summary.

    Why: a test process ends with a large heap (engines, models, Hypothesis' data), and every
    full collection walks all of it. pytest collects five times when it unconfigures and five
    more times when it removes its unraisable-exception hook, and the interpreter collects again
    while it finalizes: on a loaded machine each of those took seconds, minutes in all after the
    summary line. Collecting here, while pytest's hook still reports what a finalizer raises,
    catches the same garbage; what is left is alive, and ``gc.freeze`` puts it out of the later
    collections' way, so they only look at what is created after this point.
    """
    for _ in range(_FINAL_COLLECTIONS):
        if not gc.collect():
            break
    gc.freeze()
