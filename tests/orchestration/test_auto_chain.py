"""A step and the automatic transfers that follow it commit together, or not at all.

Why these tests: a compile worker killed between applying a validation round's outcomes and
their automatic promotion left instances in ``update_acknowledged`` for ever (the retried
validation found them moved on). The chain now runs in the step's own transaction; a crash
inside it (here: an unexpected error in the auto step) leaves the instance where it was, and a
*refused* auto step (an ``LsmError``) still lets the step commit, with the follow-ups fired
after it as before. Runs on every configured backend.
"""

from __future__ import annotations

from typing import Any

import pytest

from lsm.errors import InvalidInput
from lsm.facade import RequestContext
from lsm.orchestration.decide import Decider
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from tests.orchestration.helpers import Driver, outcome


def failing_auto(monkeypatch: pytest.MonkeyPatch, error: Exception, times: int) -> list[int]:
    """Make the first ``times`` auto steps decided raise ``error`` (wherever they are decided: on
    a snapshot or in the write transaction); returns their counter."""
    calls = [0]
    real = Decider.auto

    def auto(self: Any, command: Any) -> Any:
        calls[0] += 1
        if calls[0] <= times:
            raise error
        return real(self, command)

    monkeypatch.setattr(Decider, "auto", auto)
    return calls


def trail(engine: ApiRuntime, instance: InstanceOut) -> list[tuple[str | None, str, str]]:
    log = engine.facades.inventory.instance_log(RequestContext.local(), "thing", instance.id)
    return [(e.source, e.target, e.trigger) for e in log]


@pytest.mark.parametrize("batched", [False, True], ids=["execute", "execute_many"])
def test_a_crash_in_the_auto_step_undoes_the_step_before_it(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    driver = Driver(engine)
    updated = [driver.reach("update_start") for _ in range(3)]
    before = [trail(engine, i) for i in updated]
    failing_auto(monkeypatch, RuntimeError("worker died here"), times=1)

    with pytest.raises(RuntimeError, match="worker died here"):
        if batched:
            engine.orchestrator.execute_many(driver.ctx, [outcome(i) for i in updated])
        else:
            engine.orchestrator.execute(driver.ctx, outcome(updated[0]))

    for instance, log in zip(updated, before, strict=True):
        now = driver.get(instance)
        assert (now.state, now.version) == ("update_start", instance.version)  # not update_acknowledged
        assert trail(engine, instance) == log
    monkeypatch.undo()
    # the retried outcome (the compile's takeover) goes all the way through
    engine.orchestrator.execute_many(driver.ctx, [outcome(i) for i in updated])
    assert [driver.get(i).state for i in updated] == ["update_inprogress"] * 3


@pytest.mark.parametrize("batched", [False, True], ids=["execute", "execute_many"])
def test_a_refused_auto_step_lets_the_step_commit_and_fires_after_it(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch, batched: bool
) -> None:
    driver = Driver(engine)
    updated = [driver.reach("update_start") for _ in range(2)]
    calls = failing_auto(monkeypatch, InvalidInput("refused once"), times=1)

    if batched:
        engine.orchestrator.execute_many(driver.ctx, [outcome(i) for i in updated])
    else:
        for instance in updated:
            engine.orchestrator.execute(driver.ctx, outcome(instance))

    assert calls[0] >= 3  # refused in the chain, then fired after the commit
    for instance in updated:
        now = driver.get(instance)
        assert (now.state, now.version) == ("update_inprogress", instance.version + 2)
        assert trail(engine, instance)[-2:] == [
            ("update_start", "update_acknowledged", "validate"),
            ("update_acknowledged", "update_inprogress", "auto"),
        ]


def test_a_batch_and_its_promotions_write_one_compile_request_each(engine: ApiRuntime) -> None:
    """The chain's requests are the same as stepping one by one: one export per promotion."""
    driver = Driver(engine)
    updated = [driver.reach("update_start") for _ in range(4)]
    queued_before = {c.id for c in engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000)}

    engine.orchestrator.execute_many(driver.ctx, [outcome(i) for i in updated])

    new = [
        c
        for c in engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000)
        if c.id not in queued_before
    ]
    assert sorted(i for c in new for i in c.requested_ids) == sorted(i.id for i in updated)
    assert {c.kind for c in new} == {"partial"}


def test_a_validation_round_is_worked_out_before_the_lock_and_lands_whole(engine: ApiRuntime) -> None:
    """Outcomes and their promotions planned on a snapshot write what the locked path writes."""
    driver = Driver(engine)
    updated = [driver.reach("update_start") for _ in range(3)]
    planned = engine.orchestrator.planned_batches

    engine.orchestrator.execute_many(driver.ctx, [outcome(i) for i in updated])

    assert engine.orchestrator.planned_batches == planned + 1
    for instance in updated:
        now = driver.get(instance)
        assert (now.state, now.version) == ("update_inprogress", instance.version + 2)
        assert now.active_attributes == instance.candidate_attributes  # promoted
        assert now.desired_state_version == instance.desired_state_version + 1
        assert trail(engine, instance)[-2:] == [
            ("update_start", "update_acknowledged", "validate"),
            ("update_acknowledged", "update_inprogress", "auto"),
        ]


def test_a_row_moved_on_between_plan_and_lock_is_decided_under_the_lock(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deploy failure lands after the round was planned: its outcome is stale (no step), the
    other instances are promoted as planned would have."""
    driver = Driver(engine)
    moved, other = driver.reach("update_start"), driver.reach("update_start")
    plan_many = engine.orchestrator._decide_ahead

    def plan_then_deploy_fails(*args: Any) -> Any:
        planned = plan_many(*args)
        driver.deploy(moved, False)  # update_start -> update_start_failed, committed meanwhile
        return planned

    monkeypatch.setattr(engine.orchestrator, "_decide_ahead", plan_then_deploy_fails)
    planned = engine.orchestrator.planned_batches
    engine.orchestrator.execute_many(driver.ctx, [outcome(moved), outcome(other)])

    assert engine.orchestrator.planned_batches == planned  # the plan did not hold
    assert (driver.get(moved).state, driver.get(moved).version) == ("update_start_failed", moved.version + 1)
    assert (driver.get(other).state, driver.get(other).version) == ("update_inprogress", other.version + 2)
