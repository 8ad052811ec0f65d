"""The compile queue: two queues that never wait on each other, leases, take-over, fencing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsm.compiler.queue import CompileQueue, LeaseLost
from lsm.schemas.compiles import CompileKind
from lsm.services.leases import process_identity
from lsm.store.compiles.queue import Pending, environments_with_work
from lsm.store.compiles.requests import CompileOrder, ValidationParams, enqueue
from lsm.store.database import Database
from lsm.store.tables import CompileRow, utcnow
from tests.owners import dead_owner

ENV = "env-1"


def order(kind: CompileKind, *ids: str) -> CompileOrder:
    if kind is CompileKind.VALIDATION:
        return CompileOrder(
            ENV,
            kind,
            reason="test",
            requested_ids=list(ids),
            instance_id=ids[0],
            validation=ValidationParams(instance_version=1),
        )
    return CompileOrder(ENV, kind, reason="test", requested_ids=list(ids))


def queue_up(db: Database, *orders: CompileOrder) -> list[str]:
    ids = []
    for o in orders:
        with db.write() as session:
            ids.append(enqueue(session, o).id)
    return ids


def row(db: Database, compile_id: str) -> CompileRow:
    with db.read() as session:
        found = session.get(CompileRow, compile_id)
        assert found is not None
        return found


def test_an_export_is_claimed_past_every_validation_queued_before_it(db: Database) -> None:
    validations = queue_up(db, *(order(CompileKind.VALIDATION, f"i{n}") for n in range(50)))
    (export,) = queue_up(db, order(CompileKind.PARTIAL, "x"))
    queue = CompileQueue(db)
    batch = queue.claim_exporting(ENV, queue.new_owner("w"), batched=True)
    assert batch is not None and batch.leader.id == export
    claimed = queue.claim_validations(ENV, queue.new_owner("w"), limit=20)
    assert [b.leader.id for b in claimed] == validations[:20]  # oldest first, only as many as asked


def test_a_full_compile_absorbs_every_pending_export_and_partials_batch(db: Database) -> None:
    p1, full, p2 = queue_up(
        db, order(CompileKind.PARTIAL, "a"), order(CompileKind.FULL), order(CompileKind.PARTIAL, "b")
    )
    queue = CompileQueue(db)
    batch = queue.claim_exporting(ENV, queue.new_owner("w"), batched=False)
    assert batch is not None
    assert (batch.leader.id, sorted(r.id for r in batch.merged)) == (full, sorted([p1, p2]))
    assert {row(db, i).merged_into for i in (p1, p2)} == {full}


def test_unbatched_partials_run_one_by_one(db: Database) -> None:
    p1, p2 = queue_up(db, order(CompileKind.PARTIAL, "a"), order(CompileKind.PARTIAL, "b"))
    queue = CompileQueue(db)
    batch = queue.claim_exporting(ENV, queue.new_owner("w"), batched=False)
    assert batch is not None and (batch.leader.id, batch.merged) == (p1, [])
    assert row(db, p2).status == "queued"


def test_an_export_left_running_by_a_dead_worker_is_taken_over_then_failed_after_max_attempts(
    db: Database,
) -> None:
    (export,) = queue_up(db, order(CompileKind.PARTIAL, "a"))
    queue = CompileQueue(db, max_attempts=2)
    first = queue.claim_exporting(ENV, queue.new_owner(dead_owner("dead-1")), batched=True)
    assert first is not None  # ... and its worker dies: the next lock holder finds it running
    second = queue.claim_exporting(ENV, queue.new_owner(dead_owner("dead-2")), batched=True)
    assert second is not None and second.leader.id == export
    assert row(db, export).attempts == 2
    with pytest.raises(LeaseLost):  # the first worker, if it ever came back, can not finish it
        queue.finish(first, status="success", report={})
    assert queue.claim_exporting(ENV, queue.new_owner("w3"), batched=True) is None  # killed twice
    failed = row(db, export)
    assert (failed.status, failed.report["error"]["error"]) == ("failed", "worker_died")


def test_a_validation_whose_lease_expired_is_taken_over(db: Database) -> None:
    (validation,) = queue_up(db, order(CompileKind.VALIDATION, "i1"))
    queue = CompileQueue(db)
    (held,) = queue.claim_validations(ENV, queue.new_owner("w1"), limit=10)
    assert queue.claim_validations(ENV, queue.new_owner("w2"), limit=10) == []  # alive: not taken
    with db.write() as session:
        stale = session.get(CompileRow, validation)
        assert stale is not None
        stale.lease_expires = utcnow() - timedelta(seconds=1)  # w1 stopped renewing
        session.add(stale)
    (taken,) = queue.claim_validations(ENV, queue.new_owner("w2"), limit=10)
    assert taken.leader.id == validation
    assert queue.renew([held]) == [held]  # w1 learns it lost it
    queue.finish(taken, status="success", report={"ok": True})
    done = row(db, validation)
    assert (done.status, done.report["worker"], done.lease_owner) == ("success", "w2", None)


def test_work_given_back_on_shutdown_does_not_count_as_an_attempt(db: Database) -> None:
    (validation,) = queue_up(db, order(CompileKind.VALIDATION, "i1"))
    queue = CompileQueue(db)
    for _ in range(5):
        (held,) = queue.claim_validations(ENV, queue.new_owner("w"), limit=1)
        queue.release([held])
    assert (row(db, validation).status, row(db, validation).attempts) == ("queued", 0)


def test_two_workers_never_claim_the_same_validation(db: Database) -> None:
    queue_up(db, *(order(CompileKind.VALIDATION, f"i{n}") for n in range(30)))
    queue = CompileQueue(db)
    a = queue.claim_validations(ENV, queue.new_owner("a"), limit=20)
    b = queue.claim_validations(ENV, queue.new_owner("b"), limit=20)
    ids_a, ids_b = {x.leader.id for x in a}, {x.leader.id for x in b}
    assert (len(ids_a), len(ids_b), ids_a & ids_b) == (20, 10, set())


def test_claiming_reads_only_what_it_claims(db: Database) -> None:
    """O(claimed): a claim loads the JSON columns of the rows it takes, never of the whole queue."""
    queue_up(db, *(order(CompileKind.VALIDATION, f"i{n}") for n in range(200)))
    queue = CompileQueue(db)
    from lsm.store.compiles import queue as compile_queue

    loaded: list[int] = []
    original = compile_queue.claim

    def counting(session, ids, **kwargs):
        rows = original(session, ids, **kwargs)
        loaded.append(len(rows))
        return rows

    compile_queue.claim = counting
    try:
        queue.claim_validations(ENV, queue.new_owner("w"), limit=5)
    finally:
        compile_queue.claim = original
    assert loaded == [5]


def test_a_round_of_validations_is_finished_at_once_and_a_lost_lease_spares_the_others(db: Database) -> None:
    queued = queue_up(db, *(order(CompileKind.VALIDATION, f"i{n}") for n in range(5)))
    queue = CompileQueue(db)
    held = queue.claim_validations(ENV, queue.new_owner("w1"), limit=10)
    assert [b.leader.id for b in held] == queued
    queue.finish_many([(b, "success" if i % 2 else "failed", {"n": i}) for i, b in enumerate(held[:2])])
    assert [(row(db, i).status, row(db, i).report["n"]) for i in queued[:2]] == [
        ("failed", 0),
        ("success", 1),
    ]
    assert row(db, queued[0]).report["worker"] == "w1"
    with db.write() as session:  # w2 took one request over: w1 must not finish it
        taken = session.get(CompileRow, queued[3])
        assert taken is not None
        taken.lease_owner = "w2/other"
    queue.finish_many([(b, "success", {"n": i}) for i, b in enumerate(held[2:], start=2)])
    assert [row(db, i).status for i in queued[2:]] == ["success", "running", "success"]
    assert row(db, queued[3]).lease_owner == "w2/other"  # fenced: untouched
    assert row(db, queued[4]).report == {"n": 4, "worker": "w1"}


def test_the_requests_merged_into_a_leader_are_finished_with_it(db: Database) -> None:
    p1, p2, p3 = queue_up(db, *(order(CompileKind.PARTIAL, x) for x in "abc"))
    queue = CompileQueue(db)
    batch = queue.claim_exporting(ENV, queue.new_owner("w"), batched=True)
    assert batch is not None and batch.leader.id == p1 and {r.id for r in batch.merged} == {p2, p3}
    queue.finish(batch, status="success", report={"resources": 3}, desired_state_version=7)
    assert row(db, p1).report == {"resources": 3, "worker": "w"}
    for merged in (p2, p3):
        done = row(db, merged)
        assert (done.status, done.desired_state_version, done.lease_owner) == ("success", 7, None)
        assert done.report == {"merged_into": p1, "status": "success"}


_ENVS = ["env-a", "env-b", "env-c"]
_STATUSES = ["queued", "running", "success", "failed"]
ACTIVE = ("queued", "running")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(_ENVS), st.sampled_from(list(CompileKind)), st.sampled_from(_STATUSES)),
        max_size=25,
    )
)
def test_which_environments_have_work_is_read_off_the_queue_as_it_is(
    db: Database, requests: list[tuple[str, CompileKind, str]]
) -> None:
    """The loose index scan (``environments_with_work``) says, per environment, what a plain
    look at every request says: exporting work queued or running, validations queued, and
    validations running."""
    with db.write() as session:
        session.connection().execute(CompileRow.__table__.delete())  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
        for env_id, kind, status in requests:
            params = ValidationParams(instance_version=1) if kind is CompileKind.VALIDATION else None
            made = enqueue(
                session,
                CompileOrder(
                    env_id, kind, reason="test", requested_ids=["i"], instance_id="i", validation=params
                ),
            )
            session.flush()  # the row exists before its status is set
            session.connection().execute(
                CompileRow.__table__.update()  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
                .where(CompileRow.__table__.c.id == made.id)  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
                .values(status=status)
            )
    expected = []
    for env_id in sorted({env for env, _, status in requests if status in ACTIVE}):
        mine = [(kind, status) for env, kind, status in requests if env == env_id]
        expected.append(
            Pending(
                env_id,
                exporting=any(
                    k is not CompileKind.VALIDATION and s in ("queued", "running") for k, s in mine
                ),
                validations=(CompileKind.VALIDATION, "queued") in mine,
                running_validations=(CompileKind.VALIDATION, "running") in mine,
            )
        )
    with db.read() as session:
        assert environments_with_work(session) == expected


def test_an_export_of_a_live_worker_that_lost_its_lock_is_waited_for_not_run_twice(db: Database) -> None:
    """A live worker whose lock connection was cut still renews its lease: the next lock holder
    waits for its batch (one batch at a time, no attempt counted) until the lease expires."""
    (export,) = queue_up(db, order(CompileKind.PARTIAL, "a"))
    queued_later = queue_up(db, order(CompileKind.PARTIAL, "b"))
    queue = CompileQueue(db, max_attempts=2)
    live = queue.claim_exporting(ENV, queue.new_owner(process_identity("lsm-worker")[0]), batched=False)
    assert live is not None and live.leader.id == export
    assert queue.claim_exporting(ENV, queue.new_owner("w2"), batched=True) is None
    assert (row(db, export).status, row(db, export).attempts) == ("running", 1)
    assert row(db, queued_later[0]).status == "queued"
    assert queue.renew([live]) == []  # still its holder's

    with db.write() as session:  # its holder stops renewing
        stale = session.get(CompileRow, export)
        assert stale is not None
        stale.lease_expires = utcnow() - timedelta(seconds=1)
        session.add(stale)
    taken = queue.claim_exporting(ENV, queue.new_owner("w2"), batched=True)
    assert taken is not None and set(taken.ids) == {export, *queued_later}
    with pytest.raises(LeaseLost):
        queue.finish(live, status="success", report={})


def test_an_export_of_a_process_gone_from_this_host_is_taken_over_before_its_lease_expires(
    db: Database,
) -> None:
    (export,) = queue_up(db, order(CompileKind.PARTIAL, "a"))
    queue = CompileQueue(db, lease_ttl=3600.0)
    killed = queue.claim_exporting(ENV, queue.new_owner(dead_owner("lsm-worker")), batched=True)
    assert killed is not None
    taken = queue.claim_exporting(ENV, queue.new_owner("w2"), batched=True)
    assert taken is not None and taken.leader.id == export
    assert row(db, export).attempts == 2
