"""The compile counters of ``/metrics`` are written with the queue's outcomes, in the same
transaction: a compile that ran counts once (its merged requests do not), a compile whose
worker died too often counts as failed, and a worker that lost its lease counts nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from lsm.compiler.queue import CompileQueue, LeaseLost
from lsm.schemas.compiles import CompileKind
from lsm.store.database import Database
from lsm.store.metric_counters import lsm_metric_compile, lsm_metric_compile_stage
from tests.compiler.test_queue import ENV, order, queue_up
from tests.owners import dead_owner


def compiles(db: Database) -> dict[tuple[str, str], int]:
    t = lsm_metric_compile
    with db.read() as session:
        rows = session.connection().execute(select(t.c.kind, t.c.status, t.c.count).where(t.c.env_id == ENV))
        return {(r[0], r[1]): r[2] for r in rows}


def stages(db: Database) -> dict[str, tuple[int, float]]:
    t = lsm_metric_compile_stage
    with db.read() as session:
        rows = session.connection().execute(
            select(t.c.stage, t.c.count, t.c.seconds).where(t.c.env_id == ENV)
        )
        return {r[0]: (r[1], r[2]) for r in rows}


def test_a_batch_counts_once_with_its_stage_times(db: Database) -> None:
    queue_up(
        db, order(CompileKind.PARTIAL, "a"), order(CompileKind.PARTIAL, "b"), order(CompileKind.PARTIAL, "c")
    )
    queue = CompileQueue(db)
    batch = queue.claim_exporting(ENV, queue.new_owner("w"), batched=True)
    assert batch is not None and len(batch.merged) == 2
    queue.finish(batch, status="success", report={"timings": {"select": 0.25, "total": 1.5}})

    assert compiles(db) == {("partial", "success"): 1}
    assert stages(db) == {"select": (1, 0.25), "total": (1, 1.5)}


def test_a_lost_lease_counts_nothing_and_a_dead_worker_counts_as_failed(db: Database) -> None:
    queue_up(db, order(CompileKind.PARTIAL, "a"))
    queue = CompileQueue(db, max_attempts=2)
    first = queue.claim_exporting(ENV, queue.new_owner(dead_owner("dead-1")), batched=True)
    second = queue.claim_exporting(ENV, queue.new_owner(dead_owner("dead-2")), batched=True)
    assert first is not None and second is not None
    with pytest.raises(LeaseLost):
        queue.finish(first, status="success", report={"timings": {"total": 9.0}})
    assert compiles(db) == {} and stages(db) == {}
    assert queue.claim_exporting(ENV, queue.new_owner("w3"), batched=True) is None  # killed twice: failed

    assert compiles(db) == {("partial", "failed"): 1}
    assert stages(db) == {}  # it never reported a time


def test_validations_finished_together_count_each(db: Database) -> None:
    queue_up(db, *(order(CompileKind.VALIDATION, f"i{n}") for n in range(3)))
    queue = CompileQueue(db)
    batches = queue.claim_validations(ENV, queue.new_owner("w"), limit=10)
    queue.finish_many(
        [(b, "success" if n else "failed", {"timings": {"total": 0.5}}) for n, b in enumerate(batches)]
    )
    assert compiles(db) == {("validation", "success"): 2, ("validation", "failed"): 1}
    assert stages(db) == {"total": (3, 1.5)}
