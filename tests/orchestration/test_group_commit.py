"""Group commit (``lsm.orchestration.group``): API writes of many threads in one transaction,
each caller answered exactly as if its command had run alone (both backends).

Every test holds the writer on a gate (a work item that waits) until all the commands under
test are queued, so they are sure to share one transaction; nothing waits on luck.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event
from sqlmodel import Session

from lsm.errors import Conflict, InvalidAttributes, LsmError, UnknownInstance, VersionConflict
from lsm.facade import RequestContext
from lsm.orchestration import steps as steps_module
from lsm.orchestration.group import defer_insert
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from lsm.store.instances.repository import EVENT_TABLE, event_values
from lsm.store.tables import InstanceRow
from tests.orchestration.helpers import Driver, fail_the_commit, group_of, in_one_batch, update_call


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    """An engine with group commit on, on both backends (by default it is on for SQLite only)."""
    return engine_factory(config={"group_commit": True})


def _log_length(engine: ApiRuntime, instance: InstanceOut) -> int:
    return len(engine.facades.inventory.instance_log(RequestContext.local(), "thing", instance.id))


def test_refused_items_of_a_shared_transaction_roll_back_alone(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(8)]
    logs = [_log_length(engine, t) for t in things]
    group = group_of(engine)
    batches = group.batches
    calls = [update_call(engine, t.id, t.version, size=10 + i) for i, t in enumerate(things[:5])]
    calls += [
        update_call(engine, things[5].id, things[5].version - 1, size=99),  # stale: 409
        update_call(engine, things[6].id, things[6].version, size="big"),  # invalid: 422
        update_call(engine, "00000000-0000-4000-8000-000000000000", 1, size=3),  # unknown: 404
        update_call(engine, things[7].id, things[7].version, size=77),
    ]
    results = in_one_batch(group, calls)

    assert group.batches == batches + 2  # the gate, then every command in ONE transaction
    for i in (0, 1, 2, 3, 4, 8):
        thing = things[i if i < 5 else 7]
        assert isinstance(results[i], InstanceOut), results[i]
        assert results[i].version == thing.version + 1
        stored = driver.get(thing)
        assert stored.state == "update_start" and stored.version == thing.version + 1
        assert (stored.candidate_attributes or {})["size"] == (10 + i if i < 5 else 77)
        assert _log_length(engine, thing) == logs[i if i < 5 else 7] + 1
    assert isinstance(results[5], VersionConflict)
    assert results[5].details["current_version"] == things[5].version
    assert isinstance(results[6], InvalidAttributes)
    assert isinstance(results[7], UnknownInstance)
    for i in (5, 6):  # refused: nothing of theirs was written
        assert driver.get(things[i]).version == things[i].version
        assert _log_length(engine, things[i]) == logs[i]


def test_one_instance_many_writers_in_one_transaction_exactly_one_wins(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    thing = driver.reach("up")
    group = group_of(engine)
    results = in_one_batch(
        group, [update_call(engine, thing.id, thing.version, size=s) for s in range(2, 12)]
    )

    winners = [r for r in results if isinstance(r, InstanceOut)]
    losers = [r for r in results if isinstance(r, VersionConflict)]
    assert len(winners) == 1 and len(losers) == 9, results
    assert all(r.details["current_version"] == thing.version + 1 for r in losers)
    stored = driver.get(thing)
    assert stored.version == thing.version + 1
    assert stored.candidate_attributes == winners[0].candidate_attributes


def test_a_failing_commit_answers_nobody_success_and_writes_nothing(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(4)]
    group = group_of(engine)

    calls: list[Callable[[], Any]] = [update_call(engine, t.id, t.version, size=5) for t in things]
    calls.append(lambda: group.run(fail_the_commit))
    results = in_one_batch(group, calls)

    assert all(isinstance(r, RuntimeError) for r in results), results
    for thing in things:
        assert driver.get(thing).version == thing.version
        assert driver.get(thing).state == "up"


def test_an_unexpected_error_in_one_item_reruns_the_others_alone(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(4)]
    logs = [_log_length(engine, t) for t in things]
    group = group_of(engine)

    def broken(_session: Session) -> None:
        raise KeyError("a bug in one command")

    calls: list[Callable[[], Any]] = [update_call(engine, t.id, t.version, size=6) for t in things]
    calls.insert(2, lambda: group.run(broken))
    results = in_one_batch(group, calls)

    assert isinstance(results[2], KeyError)
    updated = [r for i, r in enumerate(results) if i != 2]
    assert all(isinstance(r, InstanceOut) and r.state == "update_start" for r in updated), results
    for thing, log in zip(things, logs, strict=True):
        assert driver.get(thing).version == thing.version + 1
        assert _log_length(engine, thing) == log + 1  # run once, not twice


def test_closing_answers_queued_work_and_a_later_call_starts_a_new_writer(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    thing = driver.reach("up")
    group = group_of(engine)
    group.close()
    out = update_call(engine, thing.id, thing.version, size=4)()
    assert out.version == thing.version + 1
    group.close()
    with pytest.raises(LsmError):
        update_call(engine, thing.id, thing.version, size=4)()  # stale now: still typed, still answered


def test_the_items_event_lines_are_inserted_once_for_the_batch_and_a_refused_items_never(
    engine: ApiRuntime,
) -> None:
    """Event lines wait for the batch's last item and go in with one statement; the lines a
    refused item deferred before it was refused are dropped with its savepoint."""
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(4)]
    logs = [_log_length(engine, t) for t in things]
    group = group_of(engine)
    inserts: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO LSM_EVENT"):
            inserts.append(statement)

    def refused(session: Session) -> None:
        row = session.get(InstanceRow, things[3].id)
        assert row is not None
        line = event_values(row, source="up", target="up", trigger="test", message="never written")
        assert defer_insert(session, EVENT_TABLE, [line])
        raise Conflict("refused after deferring its line")

    calls: list[Callable[[], Any]] = [update_call(engine, t.id, t.version, size=8) for t in things[:3]]
    calls.append(lambda: group.run(refused))
    event.listen(engine.db.write_engine, "before_cursor_execute", seen)
    try:
        results = in_one_batch(group, calls)
    finally:
        event.remove(engine.db.write_engine, "before_cursor_execute", seen)

    assert all(isinstance(r, InstanceOut) for r in results[:3]), results
    assert isinstance(results[3], Conflict)
    assert len(inserts) == 1  # three items' lines, one statement
    for thing, log in zip(things[:3], logs, strict=False):
        assert _log_length(engine, thing) == log + 1
    assert _log_length(engine, things[3]) == logs[3]


def test_an_item_refused_after_its_step_leaves_its_row_and_the_others_store_their_answers(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step is written with its item's other rows, after the item: an item refused once its
    step was taken (here: on entering the new state) writes nothing of it."""
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(3)]
    real = steps_module.after_entering

    def after_entering(decider: Any, row: InstanceRow) -> None:
        if row.id == things[2].id:
            raise Conflict("refused after its step was taken")
        real(decider, row)

    monkeypatch.setattr(steps_module, "after_entering", after_entering)
    results = in_one_batch(group_of(engine), [update_call(engine, t.id, t.version, size=9) for t in things])

    assert isinstance(results[2], Conflict), results[2]
    for thing, answer in zip(things[:2], results[:2], strict=True):
        assert isinstance(answer, InstanceOut), answer
        now = driver.get(thing)
        assert (now.state, now.version) == (answer.state, thing.version + 1) == ("update_start", now.version)
        assert now.candidate_attributes == answer.candidate_attributes
    untouched = driver.get(things[2])
    assert (untouched.state, untouched.version) == ("up", things[2].version)
    assert untouched.candidate_attributes == things[2].candidate_attributes


def test_outside_a_group_nothing_is_deferred(engine: ApiRuntime) -> None:
    with engine.db.write() as session:
        assert defer_insert(session, EVENT_TABLE, []) is False
