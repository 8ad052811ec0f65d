"""The deploy tables' read side and ``schedule_redeploy``, on both backends, over seeded rows."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text

from lsm.schemas.deploy import ResourceStatus
from lsm.services.wakeup import Listener
from lsm.store.database import Database
from lsm.store.deploy import queries as q
from lsm.store.deploy.tables import lsm_resource_state
from tests.deploy.seed import T0, rid, seed_actions, seed_desired, seed_instance, seed_states, state

ENV = "e" * 36
OTHER = "o" * 36
STATUSES = ["deployed", "failed", "skipped", "pending", "deploying", "noop_pending"]


def wait_until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    done = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if condition():
            return True
        done.wait(0.05)
    return condition()


def fleet() -> list[dict[str, object]]:
    """36 resources: 2 agents x 3 types x 6 statuses, ids deliberately not inserted in order."""
    rows = []
    for n in range(6):
        for agent in ("a2", "a1"):
            for rtype in ("std::File", "net::Host", "net::Port"):
                rows.append(state(rid(rtype, agent, f"r{(n * 7) % 6}{n}"), status=STATUSES[n]))
    return rows


@pytest.fixture
def seeded(db: Database) -> Database:
    seed_states(db, ENV, fleet())
    seed_states(db, OTHER, [state(rid("std::File", "a1", "elsewhere"))])  # never in ENV's answers
    return db


def all_ids(db: Database, **filters: Any) -> list[str]:
    with db.read() as session:
        return [r.id for r in q.list_resources(session, ENV, limit=1000, **filters)]


def test_listing_is_in_id_order_and_filters_each_column(seeded: Database) -> None:
    everything = all_ids(seeded)
    assert everything == sorted(everything) and len(everything) == 36
    assert all("elsewhere" not in i for i in everything)

    by_agent = all_ids(seeded, agent="a1")
    assert len(by_agent) == 18 and all("[a1," in i for i in by_agent)
    failed = all_ids(seeded, status=ResourceStatus.FAILED)
    assert len(failed) == 6
    hosts = all_ids(seeded, resource_type="net::Host")
    assert len(hosts) == 12 and all(i.startswith("net::Host[") for i in hosts)
    both = all_ids(seeded, agent="a2", status=ResourceStatus.FAILED, resource_type="std::File")
    assert both == [rid("std::File", "a2", "r11")]  # n = 1: failed
    assert all_ids(seeded, agent="nobody") == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    limit=st.integers(1, 40),
    agent=st.sampled_from([None, "a1", "a2"]),
    status=st.sampled_from([None, *ResourceStatus]),
)
def test_pages_concatenate_to_the_whole_listing(
    seeded: Database, limit: int, agent: str | None, status: ResourceStatus | None
) -> None:
    whole = all_ids(seeded, agent=agent, status=status)
    pages: list[str] = []
    with seeded.read() as session:
        offset = 0
        while True:
            page = q.list_resources(session, ENV, agent=agent, status=status, limit=limit, offset=offset)
            assert len(page) <= limit
            pages += [r.id for r in page]
            if len(page) < limit:
                break
            offset += limit
    assert pages == whole


def test_page_bounds_are_refused(seeded: Database) -> None:
    with seeded.read() as session, pytest.raises(ValueError):
        q.list_resources(session, ENV, limit=0)
    with seeded.read() as session, pytest.raises(ValueError):
        q.list_resources(session, ENV, limit=q.MAX_PAGE + 1)


def test_filtered_listings_read_an_index_in_order_on_sqlite(seeded: Database) -> None:
    """The filters are served by an index that ends with the id: no sort of the environment."""
    if not seeded.is_sqlite:
        pytest.skip("SQLite's plan text is what is checked here")
    cases = {
        "1 = 1": "ix_lsm_resource_state_env",
        "agent = 'a1'": "ix_lsm_resource_state_agent",
        "status = 'failed'": "ix_lsm_resource_state_status",
        "resource_type = 'net::Host'": "ix_lsm_resource_state_type",
    }
    with seeded.read() as session:
        for where, index in cases.items():
            plan = " ".join(
                str(row[-1])
                for row in session.connection().exec_driver_sql(
                    "EXPLAIN QUERY PLAN SELECT * FROM lsm_resource_state "
                    f"WHERE env_id = '{ENV}' AND {where} ORDER BY resource_id LIMIT 10"
                )
            )
            assert index in plan, plan
            assert "TEMP B-TREE" not in plan, plan


def test_one_resource_reads_the_current_desired_row(db: Database) -> None:
    host = rid("net::Host", "a1", "h1")
    fresh = rid("net::Host", "a1", "h2")
    seed_states(db, ENV, [state(host, version=2, requires=[fresh])])
    with db.write() as session:
        seed_desired(session, ENV, host, {"agent": "a1", "name": "h1", "ip": "old"}, superseded_in=2)
        seed_desired(session, ENV, host, {"agent": "a1", "name": "h1", "ip": "new"}, first_version=2)
        seed_desired(session, ENV, fresh, {"agent": "a1", "name": "h2"}, first_version=3, requires=[host])
    with db.read() as session:
        found = q.get_resource(session, ENV, host)
        planned_not_yet = q.get_resource(session, ENV, fresh)
        unknown = q.get_resource(session, ENV, rid("net::Host", "a1", "nope"))
        elsewhere = q.get_resource(session, OTHER, host)
    assert found is not None and found.attributes is not None
    assert found.attributes["ip"] == "new" and found.status == "deployed" and found.requires == [fresh]
    assert found.type == "net::Host" and found.agent == "a1" and found.set is None
    assert found.last_action_at is not None and found.last_action_at.utcoffset() == timedelta(0)
    # in the newest desired state, not planned yet: pending at the version that brought it
    assert planned_not_yet is not None
    assert (planned_not_yet.status, planned_not_yet.version, planned_not_yet.requires) == (
        "pending",
        3,
        [host],
    )
    assert unknown is None and elsewhere is None


def test_actions_are_newest_first_and_paged(db: Database) -> None:
    target = rid("std::File", "a1", "f", key="path")
    seed_actions(db, ENV, target, ["create", "none", "error", "update"])
    seed_actions(db, ENV, rid("std::File", "a1", "g", key="path"), ["delete"])
    with db.read() as session:
        newest = q.list_actions(session, ENV, target, limit=3)
        rest = q.list_actions(session, ENV, target, limit=3, offset=3)
    assert [a.action for a in newest] == ["update", "error", "none"]
    assert [a.action for a in rest] == ["create"]
    assert newest[0].changes["content"].desired == "v3" and newest[0].messages[0].message == "line 3"
    assert newest[1].status == "failed" and newest[0].started_at > newest[1].started_at


def test_progress_counts_each_status_and_missing_rows_as_waiting(db: Database) -> None:
    ids = [rid("t::R", "a", str(n)) for n in range(6)]
    seed_states(
        db,
        ENV,
        [
            state(ids[0]),
            state(ids[1]),
            state(ids[2], status="failed", last_error="boom"),
            state(ids[3], status="skipped", requires=[ids[2]]),
            state(ids[4], status="deploying"),
        ],
    )  # ids[5]: no state row yet
    seed_instance(db, ENV, "i1", ids, version=4, planned=4)
    seed_instance(db, ENV, "i2", ids[:2], version=5, planned=None)  # the planner is still at 4
    with db.read() as session:
        i1 = q.deployment_progress(session, ENV, "i1")
        i2 = q.deployment_progress(session, ENV, "i2")
        none = q.deployment_progress(session, ENV, "no-such-instance")
    assert i1.model_dump() == {"total": 6, "deployed": 2, "failed": 1, "skipped": 1, "waiting": 2}
    assert i2.model_dump() == {"total": 2, "deployed": 0, "failed": 0, "skipped": 0, "waiting": 2}
    assert none.total == 0


def _statuses(db: Database) -> dict[str, tuple[str, int, object]]:
    t = lsm_resource_state
    with db.read() as session:
        rows = session.connection().execute(
            select(t.c.resource_id, t.c.status, t.c.attempts, t.c.next_attempt_at).where(t.c.env_id == ENV)
        )
        return {r.resource_id: (r.status, r.attempts, r.next_attempt_at) for r in rows}


def test_schedule_redeploy_resets_failed_and_skipped_only_unless_repair(db: Database) -> None:
    rows = [
        state(rid("t::R", "a1", "f1"), status="failed", attempts=3, next_attempt_at=T0),
        state(rid("t::R", "a2", "f2"), status="failed", attempts=1),
        state(rid("t::R", "a1", "s1"), status="skipped"),
        state(rid("t::R", "a1", "d1")),
        state(rid("t::R", "a2", "d2")),
        state(rid("t::R", "a1", "p1"), status="pending", attempts=2, next_attempt_at=T0),
        state(rid("t::R", "a1", "r1"), status="deploying"),
    ]
    seed_states(db, ENV, rows)
    seed_states(db, OTHER, [state(rid("t::R", "a1", "f1"), status="failed")])

    with db.write() as session:
        assert q.schedule_redeploy(session, ENV, ["a1"], False) == 2  # f1, s1
    after = _statuses(db)
    assert after[rid("t::R", "a1", "f1")] == ("pending", 0, None)
    assert after[rid("t::R", "a1", "s1")][0] == "pending"
    assert after[rid("t::R", "a2", "f2")] == ("failed", 1, None)  # another agent

    with db.write() as session:
        assert q.schedule_redeploy(session, ENV, None, False) == 1  # f2
    with db.write() as session:
        assert q.schedule_redeploy(session, ENV, None, False) == 0  # nothing failed any more

    with db.write() as session:
        assert q.schedule_redeploy(session, ENV, None, True) == 6  # all but the deploying one
    after = _statuses(db)
    assert after[rid("t::R", "a1", "r1")][0] == "deploying"
    assert {s for s, _, _ in after.values()} == {"pending", "deploying"}
    assert after[rid("t::R", "a1", "p1")] == ("pending", 0, None)
    with db.read() as session:
        other = session.connection().execute(
            text("SELECT status FROM lsm_resource_state WHERE env_id = :e"), {"e": OTHER}
        )
        assert other.scalar_one() == "failed"  # never another environment's rows


def test_schedule_redeploy_wakes_listeners_of_other_processes_on_commit(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("NOTIFY is PostgreSQL's; on SQLite one process holds the agents")
    seed_states(db, ENV, [state(rid("t::R", "a1", "f1"), status="failed")])
    heard: list[str | None] = []
    listener = Listener(db, heard.append)
    listener.start()
    try:
        assert listener.connected.wait(10)
        assert wait_until(lambda: None in heard)  # the listener's own first look
        heard.clear()
        with db.write() as session:
            assert q.schedule_redeploy(session, ENV, None, False) == 1
        assert wait_until(lambda: ENV in heard)
    finally:
        listener.stop()


def test_status_counts_group_the_environment(seeded: Database) -> None:
    with seeded.read() as session:
        counts = q.status_counts(session, ENV)
        one_agent = q.status_counts(session, ENV, ["a1"])
        assert q.planned_version(session, ENV) is None
    assert counts == {s: 6 for s in STATUSES}
    assert one_agent == {s: 3 for s in STATUSES}
