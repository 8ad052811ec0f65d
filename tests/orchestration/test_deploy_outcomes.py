"""A deploy's outcomes are applied in batches (``apply_resource_outcomes``), like a validation
round's: one commit for every instance, decided on a snapshot first, with the automatic
transfers after them; a refused batch falls back to one outcome at a time, each refusal the
answer of its own outcome. Runs on every configured backend.
"""

from __future__ import annotations

import uuid

from lsm.errors import UnknownInstance
from lsm.facade import RequestContext
from lsm.orchestration import ResourceOutcome, apply_resource_outcomes
from lsm.runtime.wiring import ApiRuntime
from tests.orchestration.helpers import Driver


def test_outcomes_of_many_instances_commit_together_and_fire_their_transfers(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    creating = [driver.reach("creating") for _ in range(3)]
    failing = driver.reach("creating")
    batches = engine.orchestrator.planned_batches
    outcomes = [ResourceOutcome(i.id, i.desired_state_version, True) for i in creating]
    outcomes.append(ResourceOutcome(failing.id, failing.desired_state_version, False))

    answers = apply_resource_outcomes(engine.orchestrator, driver.ctx, outcomes)

    assert engine.orchestrator.planned_batches == batches + 1  # one batch, decided ahead
    assert [getattr(a, "state", a) for a in answers] == ["up", "up", "up", "failed"]
    for instance in [*creating, failing]:
        now = driver.get(instance)
        assert now.version == instance.version + 1
        log = engine.facades.inventory.instance_log(RequestContext.local(), "thing", instance.id)
        assert (log[-1].source, log[-1].target, log[-1].trigger) == ("creating", now.state, "resource_based")


def test_a_refused_outcome_does_not_hold_back_the_others(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    creating = [driver.reach("creating") for _ in range(2)]
    missing = str(uuid.uuid4())
    outcomes = [
        ResourceOutcome(creating[0].id, creating[0].desired_state_version, True),
        ResourceOutcome(missing, 1, True),
        ResourceOutcome(creating[1].id, creating[1].desired_state_version, True),
    ]

    answers = apply_resource_outcomes(engine.orchestrator, driver.ctx, outcomes)

    assert isinstance(answers[1], UnknownInstance)
    assert [getattr(answers[i], "state", None) for i in (0, 2)] == ["up", "up"]
    assert [driver.get(i).state for i in creating] == ["up", "up"]


def test_a_stale_outcome_takes_no_step(engine: ApiRuntime) -> None:
    """An outcome for an older desired state says nothing of the current one (as one by one)."""
    driver = Driver(engine)
    creating = driver.reach("creating")

    answers = apply_resource_outcomes(
        engine.orchestrator,
        driver.ctx,
        [ResourceOutcome(creating.id, creating.desired_state_version - 1, True)],
    )

    assert getattr(answers[0], "state", None) == "creating"
    assert driver.get(creating).version == creating.version
