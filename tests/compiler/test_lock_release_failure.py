"""A compile whose locks can not be given back still gives its runner slot back (H1).

Why a test of its own: when the database connection that holds a compile's locks dies, giving the
locks back raises (``lsm.compiler.locks`` then discards the connection, whose server session ends
with its locks). The work used to stop there, before freeing its thread slot, and after as many
such failures as an environment has slots this worker never compiled that environment again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from lsm.compiler.locks import Held, SelectionLocks
from lsm.compiler.service import CompileService, ExportWork
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.tables import CompileRow


def _lost_connection() -> OperationalError:
    return OperationalError(
        "SELECT pg_advisory_unlock(...)",
        None,
        ConnectionError("terminating connection due to administrator command"),
        connection_invalidated=True,
    )


@pytest.fixture
def failing_releases(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every compile lock release gives the locks back (as ``lsm.compiler.locks`` does when its
    statement fails) and then raises as on a lost connection; the kinds released, in order."""
    released: list[str] = []
    held_release, selections_release = Held.release, SelectionLocks.release

    def fail_after(original: Callable[..., None], kind: str) -> Callable[..., None]:
        def release(self: object) -> None:
            original(self)
            released.append(kind)
            raise _lost_connection()

        return release

    monkeypatch.setattr(Held, "release", fail_after(held_release, "export"))
    monkeypatch.setattr(SelectionLocks, "release", fail_after(selections_release, "selections"))
    yield released


def _compiles(engine: ApiRuntime) -> CompileService:
    service = engine.processing.compiles
    assert isinstance(service, CompileService)
    return service


def test_failed_lock_releases_give_every_slot_back_and_the_environment_keeps_compiling(
    engine_factory: Callable[..., ApiRuntime], failing_releases: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    engine = engine_factory()
    service = _compiles(engine)
    ctx = RequestContext.local()
    # more rounds than the environment has slots: one leaked slot per failure would stop it
    rounds = service.per_environment + 2
    for i in range(rounds):
        thing = engine.facades.inventory.create_instance(ctx, "thing", {"name": f"t{i}"})
        with caplog.at_level(logging.WARNING):
            engine.processing.drain()
        # validated, then exported: both kinds of work failed to give their locks back
        assert engine.facades.inventory.get_instance(ctx, "thing", thing.id).state == "creating"
        assert service._running == {}, f"round {i}: a thread slot was kept"
    assert {"export", "selections"} <= set(failing_releases)
    assert len(failing_releases) >= 2 * rounds
    assert all(c.status == "success" for c in engine.facades.compiles.list_compiles(ctx, limit=1000))
    # an operational event, told in one line: no traceback in the log
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert any("giving its compile locks back failed" in r.getMessage() for r in caplog.records)


def test_a_compile_whose_lock_connection_was_terminated_frees_its_slot(
    engine_factory: Callable[..., ApiRuntime], db: Database
) -> None:
    """The H1 fault itself on PostgreSQL: the backend holding the exporting lock is ended while
    the compile runs."""
    if db.is_sqlite:
        pytest.skip("PostgreSQL advisory locks live on a connection; SQLite's are in process")
    engine = engine_factory()
    service = _compiles(engine)
    service.per_environment = 3  # as a worker's default: a second runner thread may claim
    ctx = RequestContext.local()
    for i in range(service.per_environment + 1):
        engine.facades.compiles.request_compile(ctx, kind="full")
        work = service.claim()
        assert isinstance(work, ExportWork)
        conn = work.held._conn
        assert conn is not None
        pid = conn.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]  # a psycopg connection on PostgreSQL
        with engine.db.write() as session:
            assert session.execute(text("SELECT pg_terminate_backend(:pid, 30000)"), {"pid": pid}).scalar()
        # its advisory lock is gone with its connection, but the lock's in-process part is still
        # held: another runner thread, with more exporting work queued, does not take the request
        # over as a dead worker's
        engine.facades.compiles.request_compile(ctx, kind="full")
        assert not isinstance(service.claim(), ExportWork)
        with engine.db.read() as session:
            running = session.get(CompileRow, work.batches[0].leader.id)
            assert running is not None
            assert (running.status, running.lease_owner, running.attempts) == (
                "running",
                work.batches[0].owner,
                1,
            )
        work.run()
        assert service._running == {}, f"round {i}: a thread slot was kept"
        done = engine.facades.compiles.get_compile(ctx, work.batches[0].leader.id)
        assert done.status == "success"
        engine.processing.drain()  # the one queued meanwhile
    # the lock went with its connection: another worker (another pool) may take it now
    assert isinstance(work, ExportWork)
    other = type(service.locks)(Database(db.url, schema=db.schema))
    try:
        held = other.try_export(work.env_id)
        assert held is not None
        held.release()
    finally:
        other.db.dispose()
