"""Every transfer of the ``simple`` lifecycle, driven through the one orchestration function.

Validation and deploy outcomes are injected (``ValidationOutcome`` / ``ResourceOutcome``), the
way the compiler and the deploy engine report them. Each case starts from a freshly reached
state and checks the destination, the version bump, the attribute-set operation and the log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.compiles import CompileStatus
from lsm.schemas.inventory import InstanceOut
from tests.orchestration.helpers import Driver

Action = Callable[[Driver, InstanceOut], InstanceOut]

# number: (source state, action, destination, versions added, trigger logged last)
CASES: dict[int, tuple[str, Action, str, int, str]] = {
    1: ("start", lambda d, i: d.validate(i, True), "creating", 2, "auto"),  # 1 then 2 (auto promote)
    -1: ("start", lambda d, i: d.validate(i, False), "rejected", 1, "validate"),
    3: ("creating", lambda d, i: d.deploy(i, True), "up", 1, "resource_based"),
    -3: ("creating", lambda d, i: d.deploy(i, False), "failed", 1, "resource_based"),
    4: ("up", lambda d, i: d.deploy(i, True), "up", 0, "resource_based"),
    -4: ("up", lambda d, i: d.deploy(i, False), "failed", 1, "resource_based"),
    5: ("failed", lambda d, i: d.deploy(i, True), "up", 1, "resource_based"),
    -5: ("failed", lambda d, i: d.deploy(i, False), "failed", 0, "resource_based"),
    6: ("up", lambda d, i: d.update(i, size=5), "update_start", 1, "on_update"),
    7: ("update_start", lambda d, i: d.validate(i, True), "update_inprogress", 2, "auto"),  # 7 then 9
    -7: ("update_start", lambda d, i: d.validate(i, False), "update_rejected", 1, "validate"),
    8: ("update_start_failed", lambda d, i: d.validate(i, True), "update_inprogress", 2, "auto"),  # 8, 10
    -8: ("update_start_failed", lambda d, i: d.validate(i, False), "update_rejected_failed", 1, "validate"),
    11: ("update_inprogress", lambda d, i: d.deploy(i, True), "up", 1, "resource_based"),
    -11: ("update_inprogress", lambda d, i: d.deploy(i, False), "update_failed", 1, "resource_based"),
    12: ("update_start", lambda d, i: d.deploy(i, True), "update_start", 0, "on_update"),
    -12: ("update_start", lambda d, i: d.deploy(i, False), "update_start_failed", 1, "resource_based"),
    13: ("update_start_failed", lambda d, i: d.deploy(i, True), "update_start", 1, "resource_based"),
    14: ("update_rejected", lambda d, i: d.deploy(i, True), "update_rejected", 0, "validate"),
    -14: ("update_rejected", lambda d, i: d.deploy(i, False), "update_rejected_failed", 1, "resource_based"),
    15: ("update_rejected_failed", lambda d, i: d.deploy(i, True), "update_rejected", 1, "resource_based"),
    16: ("update_rejected", lambda d, i: d.set_state(i, "up"), "up", 1, "api_set_state"),
    17: ("update_rejected_failed", lambda d, i: d.set_state(i, "failed"), "failed", 1, "api_set_state"),
    18: ("update_failed", lambda d, i: d.set_state(i, "rollback"), "rollback", 1, "api_set_state"),
    19: ("rollback", lambda d, i: d.deploy(i, True), "up", 1, "resource_based"),
    -19: ("rollback", lambda d, i: d.deploy(i, False), "failed", 1, "resource_based"),
    20: ("update_failed", lambda d, i: d.deploy(i, True), "up", 1, "resource_based"),
    21: ("rejected", lambda d, i: d.update(i, size=3), "start", 1, "on_update"),
    22: ("update_rejected", lambda d, i: d.update(i, size=4), "update_start", 1, "on_update"),
    23: ("update_rejected_failed", lambda d, i: d.update(i, size=4), "update_start_failed", 1, "on_update"),
    24: ("deleting", lambda d, i: d.deploy(i, True), "terminated", 1, "resource_based"),
    -24: ("deleting", lambda d, i: d.deploy(i, False), "deleting", 0, "resource_based"),
    25: ("rejected", lambda d, i: d.delete(i), "terminated", 1, "on_delete"),
    26: ("up", lambda d, i: d.delete(i), "deleting", 1, "on_delete"),
    27: ("creating", lambda d, i: d.delete(i), "deleting", 1, "on_delete"),
    28: ("update_failed", lambda d, i: d.delete(i), "deleting", 1, "on_delete"),
    29: ("failed", lambda d, i: d.delete(i), "deleting", 1, "on_delete"),
    30: ("creating", lambda d, i: d.export_fails(i), "failed", 1, "export_failed"),
    31: ("update_inprogress", lambda d, i: d.export_fails(i), "update_failed", 1, "export_failed"),
    32: ("rollback", lambda d, i: d.export_fails(i), "failed", 1, "export_failed"),
    33: ("deleting", lambda d, i: d.export_fails(i), "delete_failed", 1, "export_failed"),
    34: ("delete_failed", lambda d, i: d.deploy(i, True), "terminated", 1, "resource_based"),
    -34: ("delete_failed", lambda d, i: d.deploy(i, False), "delete_failed", 0, "resource_based"),
    35: ("delete_failed", lambda d, i: d.delete(i), "deleting", 1, "on_delete"),
    # a state without an export_failed transfer: the failure is logged, nothing moves
    -35: ("failed", lambda d, i: d.export_fails(i), "failed", 0, "export_failed"),
}


#: each transfer's number, its error case right after it
NUMBERS = sorted(CASES, key=lambda n: (abs(n), n < 0))


@pytest.mark.parametrize("number", NUMBERS, ids=lambda n: f"T{abs(n)}{'err' if n < 0 else ''}")
def test_transfer(engine: ApiRuntime, number: int) -> None:
    driver = Driver(engine)
    source, action, destination, bumps, last_trigger = CASES[number]
    before = driver.reach(source)
    after = action(driver, before)
    assert after.state == destination
    assert after.version == before.version + bumps
    log = engine.facades.inventory.instance_log(RequestContext.local(), "thing", after.id)
    assert log[-1].trigger == last_trigger
    assert [e.version for e in log] == sorted(e.version for e in log)
    assert log[-1].target == after.state or bumps == 0


def test_every_transfer_of_simple_is_covered(engine: ApiRuntime) -> None:
    assert {abs(n) for n in CASES} | {2, 9, 10} == set(range(1, 36))
    assert len(engine.lifecycles.get("simple").transfers) == 35


def test_deleting_again_after_a_failed_delete_export_asks_for_the_purge_anew(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    failed = driver.reach("delete_failed")
    again = driver.delete(failed)
    assert again.desired_state_version == failed.desired_state_version + 1  # transfer 35: request_export
    queued = engine.facades.compiles.list_compiles(RequestContext.local(), status=CompileStatus.QUEUED)
    assert any(
        c.kind in ("partial", "full") and failed.id in (c.requested_ids or [failed.id]) for c in queued
    )


def test_create_then_validation_promotes_candidate(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    created = driver.create(size=3)
    assert (created.version, created.state, created.desired_state_version) == (1, "start", 0)
    assert created.candidate_attributes == {"name": "t1", "size": 3, "slot": None, "tags": []}
    assert created.active_attributes is None
    creating = driver.validate(created, True, slot=7)
    assert creating.active_attributes == {"name": "t1", "size": 3, "slot": 7, "tags": []}
    assert creating.candidate_attributes is None and creating.rollback_attributes is None
    assert creating.desired_state_version == 1
    steps = [
        (e.source, e.target, e.trigger)
        for e in engine.facades.inventory.instance_log(RequestContext.local(), "thing", created.id)
    ]
    assert steps == [
        (None, "start", "create"),
        ("start", "acknowledged", "validate"),
        ("acknowledged", "creating", "auto"),
    ]


def test_update_promote_and_rollback_move_attribute_sets(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    up = driver.reach("up")
    update_start = driver.update(up, size=9)
    assert update_start.candidate_attributes is not None and update_start.candidate_attributes["size"] == 9
    assert update_start.active_attributes is not None and update_start.active_attributes["size"] == 1
    inprogress = driver.validate(update_start, True)
    assert inprogress.active_attributes is not None and inprogress.active_attributes["size"] == 9
    assert inprogress.rollback_attributes is not None and inprogress.rollback_attributes["size"] == 1
    assert inprogress.desired_state_version == up.desired_state_version + 1
    failed = driver.deploy(inprogress, False)
    rolled = driver.set_state(failed, "rollback")
    assert rolled.active_attributes is not None and rolled.active_attributes["size"] == 1
    assert rolled.candidate_attributes is not None and rolled.candidate_attributes["size"] == 9
    assert rolled.rollback_attributes is None
    assert rolled.desired_state_version == failed.desired_state_version + 1


def test_clear_candidate_on_return_from_update_rejected(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    rejected = driver.reach("update_rejected")
    assert rejected.candidate_attributes is not None
    up = driver.set_state(rejected, "up")
    assert up.candidate_attributes is None
    assert up.active_attributes == rejected.active_attributes


def test_stale_outcomes_are_ignored(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    created = driver.create()
    rejected = driver.validate(created, False)
    # a late validation result for version 1 must not move the instance
    again = driver.validate(created, True)
    assert (again.state, again.version) == (rejected.state, rejected.version)
    up = driver.reach("up")
    stale_deploy: Any = up.model_copy(update={"desired_state_version": up.desired_state_version - 1})
    assert driver.deploy(stale_deploy, False).state == "up"


def test_terminated_instance_is_deleted_and_frees_its_identity(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    terminated = driver.reach("terminated")
    assert terminated.deleted
    assert engine.facades.inventory.list_instances(RequestContext.local(), "thing") == []
    assert [
        i.id
        for i in engine.facades.inventory.list_instances(
            RequestContext.local(), "thing", include_deleted=True
        )
    ] == [terminated.id]
    fresh = driver.create(name="t1")  # the identity of the terminated instance is free again
    assert fresh.id != terminated.id
