"""Group commit, items worked out before the lock (``lsm.orchestration.group``, "Worked out
before the lock"): a planned item only writes when the rows its plan read are unchanged, and
runs its locked work otherwise; the answer is the one the locked path gives.

The first tests drive ``GroupCommit`` with stand-in plans over a table of versions the test
controls, so that every way of falling back is pinned down; the last ones go through the
engine's orchestration (both backends).
"""

from __future__ import annotations

import itertools
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session

from lsm.errors import InvalidAttributes, InvalidInput, LsmError, TransferNotAllowed, VersionConflict
from lsm.facade import RequestContext
from lsm.orchestration.group import GroupCommit, Planned
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.compiles import CompileKind
from lsm.schemas.inventory import InstanceOut
from lsm.store.database import Database
from lsm.store.instances.repository import instance_versions
from tests.orchestration.helpers import Driver, group_of, in_one_batch, update_call


class Rows:
    """Stand-in instance versions: what the group's version reader sees, and a log of what ran."""

    def __init__(self, **versions: int) -> None:
        self.versions = dict(versions)
        self.ran: list[str] = []
        self.reads = 0

    def read(self, _session: Session, ids: Collection[str]) -> dict[str, int]:
        self.reads += 1
        return {i: self.versions[i] for i in ids if i in self.versions}

    def work(self, name: str, *, bump: str | None = None) -> Callable[[Session], str]:
        """Locked work: records itself, optionally moves a row on, answers ``locked``."""

        def work(_session: Session) -> str:
            self.ran.append(f"{name}:locked")
            if bump is not None:
                self.versions[bump] += 1
            return f"{name}:locked"

        return work

    def plan(
        self, name: str, guards: dict[str, int], *, fails: BaseException | None = None
    ) -> Callable[[Session], Planned[str]]:
        """A plan that read ``guards``; applying it moves those rows on, answers ``planned``."""

        def plan(_session: Session) -> Planned[str]:
            if fails is not None:
                raise fails

            def apply(_write: Session) -> str:
                self.ran.append(f"{name}:planned")
                for i in guards:
                    self.versions[i] += 1
                return f"{name}:planned"

            return Planned(dict(guards), apply)

        return plan


def _in_one_batch(group: GroupCommit, calls: list[tuple[Callable[[Session], Any], Any]]) -> list[Any]:
    """Queue ``(work, plan)`` calls in this order behind a gate (one batch); their answers."""
    return in_one_batch(group, [partial(group.run, work, plan=plan) for work, plan in calls])


@pytest.fixture
def rows() -> Rows:
    return Rows(a=1, b=1, c=1)


@pytest.fixture
def group(db: Database, rows: Rows) -> Any:
    group = GroupCommit(db, item_errors=(LsmError,), versions=rows.read, name="test-planned")
    yield group
    group.close()


def test_plans_that_still_hold_are_only_applied(group: GroupCommit, rows: Rows) -> None:
    answers = _in_one_batch(
        group,
        [(rows.work("a"), rows.plan("a", {"a": 1})), (rows.work("b"), rows.plan("b", {"b": 1, "c": 1}))],
    )
    assert answers == ["a:planned", "b:planned"]
    assert rows.ran == ["a:planned", "b:planned"]  # no locked work ran
    assert group.planned == 2
    assert rows.reads == 1  # one read of the versions for the whole batch


def test_a_row_that_moved_since_the_plan_sends_its_item_down_the_locked_path(
    group: GroupCommit, rows: Rows
) -> None:
    rows.versions["b"] = 2  # written by someone else after the plan read version 1
    answers = _in_one_batch(
        group,
        [(rows.work("a"), rows.plan("a", {"a": 1})), (rows.work("b"), rows.plan("b", {"b": 1}))],
    )
    assert answers == ["a:planned", "b:locked"]
    assert group.planned == 1


def test_a_row_written_by_an_earlier_plan_of_the_batch_is_not_planned_again(
    group: GroupCommit, rows: Rows
) -> None:
    answers = _in_one_batch(
        group,
        [
            (rows.work("first"), rows.plan("first", {"a": 1})),
            (rows.work("second"), rows.plan("second", {"a": 1})),
        ],
    )
    assert answers == ["first:planned", "second:locked"]


def test_after_locked_work_the_versions_are_read_again(group: GroupCommit, rows: Rows) -> None:
    answers = _in_one_batch(
        group,
        [
            (rows.work("x", bump="b"), None),  # locked work that moves b on
            (rows.work("b"), rows.plan("b", {"b": 1})),  # its plan read b before that
            (rows.work("c"), rows.plan("c", {"c": 1})),  # untouched: still planned
        ],
    )
    assert answers == ["x:locked", "b:locked", "c:planned"]
    assert rows.reads == 2  # once for the batch, once more after the locked item


@pytest.mark.parametrize(
    "error",
    [
        InvalidInput("not decided on the snapshot"),
        VersionConflict("stale on the snapshot"),
        KeyError("a bug"),
    ],
    ids=["needs-lock", "refused", "bug"],
)
def test_a_plan_that_fails_leaves_the_answer_to_the_locked_work(
    group: GroupCommit, rows: Rows, error: BaseException
) -> None:
    answers = _in_one_batch(group, [(rows.work("a"), rows.plan("a", {"a": 1}, fails=error))])
    assert answers == ["a:locked"]
    assert group.planned == 0


def test_an_apply_that_raises_runs_every_item_alone(group: GroupCommit, rows: Rows) -> None:
    def broken(_session: Session) -> Planned[str]:
        def apply(_write: Session) -> str:
            raise RuntimeError("a bug while writing")

        return Planned({"b": 1}, apply)

    answers = _in_one_batch(group, [(rows.work("a"), rows.plan("a", {"a": 1})), (rows.work("b"), broken)])
    # the batch's transaction rolled back: each item ran its locked work in a transaction of its own
    assert answers == ["a:locked", "b:locked"]
    assert rows.ran == ["a:planned", "a:locked", "b:locked"]
    assert group.planned == 0


def test_without_a_version_reader_plans_are_ignored(db: Database, rows: Rows) -> None:
    group = GroupCommit(db, item_errors=(LsmError,), name="test-unplanned")
    try:
        assert _in_one_batch(group, [(rows.work("a"), rows.plan("a", {"a": 1}))]) == ["a:locked"]
    finally:
        group.close()


# -- through the orchestration ----------------------------------------------------------------------


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    """An engine with group commit on, on both backends (by default it is on for SQLite only)."""
    return engine_factory(config={"group_commit": True})


def test_updates_are_planned_and_land_as_the_locked_path_writes_them(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(3)]
    group = group_of(engine)
    planned = group.planned
    validations = _validations(engine)
    answers = in_one_batch(
        group_of(engine), [update_call(engine, t.id, t.version, size=40 + i) for i, t in enumerate(things)]
    )

    assert group.planned == planned + 3
    for i, (thing, answer) in enumerate(zip(things, answers, strict=True)):
        assert isinstance(answer, InstanceOut), answer
        stored = driver.get(thing)
        assert answer.version == stored.version == thing.version + 1
        assert stored.state == answer.state == "update_start"
        assert stored.candidate_attributes == answer.candidate_attributes
        assert (stored.candidate_attributes or {})["size"] == 40 + i
        log = engine.facades.inventory.instance_log(RequestContext.local(), "thing", thing.id)
        assert (log[-1].source, log[-1].target, log[-1].version) == ("up", "update_start", stored.version)
    # each update asked for one validation compile of its instance
    after = _validations(engine)
    assert {t.id: after.get(t.id, 0) - validations.get(t.id, 0) for t in things} == {t.id: 1 for t in things}


def _validations(engine: ApiRuntime) -> dict[str | None, int]:
    """Validation compile requests per instance."""
    compiles = engine.facades.compiles.list_compiles(
        RequestContext.local(), limit=1000, kind=CompileKind.VALIDATION
    )
    return dict(Counter(c.instance_id for c in compiles))


def test_a_change_committed_between_plan_and_lock_is_seen_by_the_locked_path(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = Driver(engine)
    thing, other = driver.reach("up"), driver.reach("up")
    group = group_of(engine)
    plan_batch = group._plan

    def plan_then_someone_writes(batch: list[Any]) -> list[Any]:
        plans = plan_batch(batch)
        if len(batch) == 2:  # the two updates under test (not the gate): another writer wins thing
            driver.update(thing, size=7)
        return plans

    monkeypatch.setattr(group, "_plan", plan_then_someone_writes)
    planned = group.planned
    answers = in_one_batch(
        group_of(engine),
        [
            update_call(engine, thing.id, thing.version, size=8),
            update_call(engine, other.id, other.version, size=9),
        ],
    )

    assert isinstance(answers[0], VersionConflict), answers[0]  # the locked path saw the new version
    assert answers[0].details["current_version"] == thing.version + 1
    assert isinstance(answers[1], InstanceOut) and answers[1].version == other.version + 1
    assert group.planned == planned + 1
    assert (driver.get(thing).candidate_attributes or {})["size"] == 7


_EXAMPLES = itertools.count(1)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    commands=st.lists(
        st.tuples(
            st.integers(0, 2),
            st.sampled_from(["current", "current", "as_read", "stale", "ahead"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_a_batch_answers_as_its_commands_run_one_by_one_in_order(
    engine: ApiRuntime, commands: list[tuple[int, str, bool]]
) -> None:
    """Random batches of updates (some of one instance, some stale, some invalid) against a
    model of running them one after the other: same answers, same stored versions and sizes.
    (A second update of one instance finds it in ``update_start``, which refuses updates.)"""
    driver = Driver(engine)
    driver.created = 10 * next(_EXAMPLES)  # the examples share the engine: names stay unique
    things = [driver.reach("up") for _ in range(3)]
    versions = [t.version for t in things]
    sizes: list[Any] = [(t.candidate_attributes or t.active_attributes or {}).get("size") for t in things]
    calls, expected = [], list[Any]()
    for n, (which, base, valid) in enumerate(commands):
        thing = things[which]
        # "as_read": the version the batch's snapshot shows, stale once an earlier item wrote it
        given_version = {
            "current": versions[which],
            "as_read": thing.version,
            "stale": versions[which] - 1,
            "ahead": versions[which] + 1,
        }[base]
        size: Any = 100 + n if valid else "big"
        calls.append(update_call(engine, thing.id, given_version, size=size))
        if given_version != versions[which]:
            expected.append(VersionConflict)
        elif versions[which] != thing.version:  # updated earlier in the batch: in update_start
            expected.append(TransferNotAllowed)
        elif not valid:
            expected.append(InvalidAttributes)
        else:
            versions[which] += 1
            sizes[which] = size
            expected.append(versions[which])

    answers = in_one_batch(group_of(engine), calls)

    got = [a.version if isinstance(a, InstanceOut) else type(a) for a in answers]
    assert got == expected, answers
    for which, thing in enumerate(things):
        stored = driver.get(thing)
        assert stored.version == versions[which]
        assert (stored.candidate_attributes or stored.active_attributes or {}).get("size") == sizes[which]


def test_the_version_read_covers_many_ids_and_leaves_out_unknown_ones(engine: ApiRuntime) -> None:
    """``repository.instance_versions``, the check under the lock: ids in chunks of 500, any
    environment's, the current version of each known one, nothing for an unknown one."""
    driver = Driver(engine)
    things = [driver.create() for _ in range(3)]
    moved = driver.validate(things[1], True)  # its version moved on
    unknown = [str(uuid.uuid4()) for _ in range(1200)]
    with engine.db.write() as session:
        got = instance_versions(session, [*unknown[:700], *(t.id for t in things), *unknown[700:]])
    assert got == {things[0].id: things[0].version, moved.id: moved.version, things[2].id: things[2].version}
    assert moved.version > things[1].version
