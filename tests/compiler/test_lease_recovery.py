"""A holder whose heartbeats failed past its lease (the database was away) re-examines its claims.

What it still holds (nobody took it over meanwhile) its next heartbeat renews and it finishes
as usual; what another worker took back it learns at that heartbeat, and its late result is
fenced out. Through ``CompileService.heartbeat``, which retries a lost connection itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.exc import DisconnectionError

from lsm.compiler.queue import CompileQueue, LeaseLost
from lsm.compiler.service import CompileService, ValidationWork
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.tables import CompileRow, utcnow


def _service(engine: ApiRuntime) -> CompileService:
    service = engine.processing.compiles
    assert isinstance(service, CompileService)
    return service


def _expire(engine: ApiRuntime, ids: list[str]) -> None:
    """The holder's renewals failed for longer than its lease."""
    with engine.db.write() as session:
        session.execute(
            update(CompileRow)
            .where(CompileRow.id.in_(ids))  # type: ignore[attr-defined]  # a SQLModel field reads as its Python type
            .values(lease_expires=utcnow() - timedelta(seconds=1))
        )


def _claim_validation(engine: ApiRuntime, service: CompileService, name: str) -> ValidationWork:
    engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": name})
    work = service.claim()
    assert isinstance(work, ValidationWork)
    return work


def test_a_claim_nobody_took_is_renewed_by_its_holders_next_heartbeat_through_a_lost_connection(
    engine_factory: Callable[..., ApiRuntime],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = engine_factory()
    service = _service(engine)
    work = _claim_validation(engine, service, "a")
    ids = [b.leader.id for b in work.batches]
    _expire(engine, ids)
    # the first renewal meets a dropped connection; the retry goes through
    renew = CompileQueue.renew
    failed: list[int] = []

    def flaky(queue: CompileQueue, batches: list[object]) -> object:
        if not failed:
            failed.append(1)
            raise DisconnectionError("the server closed this pooled connection")
        return renew(queue, batches)  # type: ignore[arg-type]  # the batches renew was given, passed on

    monkeypatch.setattr(CompileQueue, "renew", flaky)
    with caplog.at_level(logging.WARNING):
        service.heartbeat([work])
    assert failed and not [r for r in caplog.records if "lease lost" in r.getMessage()]
    with engine.db.read() as session:
        rows = [session.get(CompileRow, i) for i in ids]
    # its own again
    assert all(r is not None and r.lease_expires is not None and r.lease_expires > utcnow() for r in rows)
    work.run()
    ctx = RequestContext.local()
    assert {engine.facades.compiles.get_compile(ctx, i).status for i in ids} == {"success"}


def test_a_claim_taken_back_meanwhile_is_reported_lost_and_its_result_fenced_out(
    engine_factory: Callable[..., ApiRuntime], caplog: pytest.LogCaptureFixture
) -> None:
    engine = engine_factory()
    service = _service(engine)
    work = _claim_validation(engine, service, "a")
    batch = work.batches[0]
    _expire(engine, [batch.leader.id])
    (taken,) = service.queue.claim_validations(work.env_id, service.queue.new_owner("other"), limit=10)
    assert taken.leader.id == batch.leader.id and taken.owner != batch.owner
    with caplog.at_level(logging.WARNING):
        service.heartbeat([work])
    assert any(f"compile {batch.leader.id}: lease lost" in r.getMessage() for r in caplog.records)
    with pytest.raises(LeaseLost):
        service.queue.finish(batch, status="success", report={})
    service.queue.finish(taken, status="success", report={})
    done = engine.facades.compiles.get_compile(RequestContext.local(), batch.leader.id)
    assert done.status == "success" and done.report["worker"] == "other"
    service.finished(work.env_id, notify=False)  # the claim's slot (the work never ran)
    assert service._running == {}
