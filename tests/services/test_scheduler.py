"""auto_full_compile: ticks fire once, in one process, and collect stale shared resources."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import select

from lsm.facade import RequestContext
from lsm.orchestration.commands import ForceState
from lsm.runtime.wiring import ApiRuntime
from lsm.services.scheduler import Scheduler
from lsm.store.database import Database
from lsm.store.tables import CompileRow, LeaseRow

NETWORKS = str(Path(__file__).resolve().parent.parent.parent / "examples" / "networks")
T0 = datetime(2026, 11, 22, 12, 0, 30, tzinfo=UTC)


def fulls(db: Database) -> list[CompileRow]:
    with db.read() as session:
        return list(session.exec(select(CompileRow).where(CompileRow.kind == "full")))


def test_a_tick_fires_once_and_not_for_time_before_the_cron_was_seen(db: Database) -> None:
    env = "env-a"
    scheduler = Scheduler(db, lambda: [(env, "* * * * *")])
    assert scheduler.tick(T0) == []  # first sight: 12:00 is recorded, nothing owed
    assert scheduler.tick(T0 + timedelta(seconds=20)) == []  # still 12:00
    fired = scheduler.tick(T0 + timedelta(seconds=40))  # 12:01 passed
    assert len(fired) == 1
    assert scheduler.tick(T0 + timedelta(seconds=50)) == []  # 12:01 already fired
    rows = fulls(db)
    assert [(r.id, r.env_id, r.actor) for r in rows] == [(fired[0], env, "scheduler")]
    assert "auto_full_compile" in rows[0].reason


def test_a_tick_is_skipped_while_a_full_compile_is_queued(db: Database) -> None:
    scheduler = Scheduler(db, lambda: [("env-a", "* * * * *")])
    scheduler.tick(T0)
    assert len(scheduler.tick(T0 + timedelta(minutes=1))) == 1
    assert scheduler.tick(T0 + timedelta(minutes=2)) == []  # the first one is still queued
    assert len(fulls(db)) == 1


def test_environments_without_a_cron_are_left_alone(db: Database) -> None:
    scheduler = Scheduler(db, lambda: [("env-a", ""), ("env-b", "*/5 * * * *")])
    scheduler.tick(T0)
    assert scheduler.tick(T0 + timedelta(minutes=3)) == []
    assert [r.env_id for r in fulls(db)] == []
    assert len(scheduler.tick(T0 + timedelta(minutes=5))) == 1
    assert [r.env_id for r in fulls(db)] == ["env-b"]


def test_one_scheduler_holds_the_lease_and_another_takes_over_when_it_expires(db: Database) -> None:
    first = Scheduler(db, lambda: [], lease_ttl=60)
    second = Scheduler(db, lambda: [], lease_ttl=60)
    first.claim()
    second.claim()
    assert (first.lease.held, second.lease.held) == (True, False)
    with db.write() as session:  # the holder died: its lease ran out
        lease = session.get(LeaseRow, "scheduler")
        assert lease is not None
        lease.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    second._next_check = 0.0
    second.claim()
    assert second.lease.held
    assert not first.lease.keep()  # the old holder learns it lost the lease


def test_auto_full_compile_collects_a_stale_shared_resource(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """networks: every network's hosts share one AgentConfig; once the last network is gone, only a
    full compile removes it, and the cron requests that compile."""
    engine = engine_factory(NETWORKS, auto_full_compile="* * * * *")
    env_id = engine.context(None).env_id
    created = engine.facades.inventory.create_instance(
        RequestContext.local(), "network", {"name": "n1", "hosts": 1}
    )
    engine.processing.drain()
    row = engine.facades.inventory.get_instance(RequestContext.local(), "network", created.id)
    shared_before = engine.store.content(env_id, engine.store.latest_version(env_id) or 0).shared
    assert shared_before, "the example's shared resource is there while the network lives"
    gone = ForceState("network", row.id, row.version, "terminated", message="test: the network is gone")
    engine.orchestrator.execute(engine.context(None), gone)
    engine.processing.drain()
    stale = engine.store.content(env_id, engine.store.latest_version(env_id) or 0).shared
    assert stale == shared_before  # a partial export never removes a shared resource
    clock = [datetime.now(UTC)]
    scheduler = Scheduler(engine.db, engine.processing.scheduler.schedules, clock=lambda: clock[0])
    scheduler.tick(clock[0])
    clock[0] += timedelta(minutes=1)
    assert len(scheduler.tick(clock[0])) == 1
    engine.processing.drain()
    assert engine.store.content(env_id, engine.store.latest_version(env_id) or 0).shared == []


def test_in_real_time_a_minutely_cron_collects_a_stale_shared_resource_within_two_minutes(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """The must-show of the issue as it runs: no fake clock, the engine's own service loop and
    scheduler, ``auto_full_compile = "* * * * *"``. The next minute boundary is at most 60 s
    away (the scheduler's first sight of the cron owes nothing), so two minutes is the bound."""
    engine = engine_factory(NETWORKS, embedded_worker=True, auto_full_compile="* * * * *")
    env_id = engine.context(None).env_id
    created = engine.facades.inventory.create_instance(
        RequestContext.local(), "network", {"name": "n1", "hosts": 1}
    )

    def shared() -> list[object] | None:
        version = engine.store.latest_version(env_id)
        return None if version is None else list(engine.store.content(env_id, version).shared)

    def settled(predicate: Callable[[], bool], within: float) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.5)
        return predicate()

    assert settled(lambda: bool(shared()), 60), "the network's shared resource was never exported"
    row = engine.facades.inventory.get_instance(RequestContext.local(), "network", created.id)
    gone = ForceState("network", row.id, row.version, "terminated", message="test: the network is gone")
    ticks_before = {r.id for r in fulls(engine.db) if r.actor == "scheduler"}
    engine.orchestrator.execute(engine.context(None), gone)
    started = time.monotonic()
    assert settled(lambda: shared() == [], 120), "no full compile collected the stale shared resource"
    assert time.monotonic() - started <= 120
    ticks_after = {r.id for r in fulls(engine.db) if r.actor == "scheduler"}
    assert ticks_after - ticks_before, "the resource went away without a scheduled full compile"
