"""LifecycleMachine.step: every edge of `simple`, the refusals, and many threads at once."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from typing import Any, Final

import pytest

from lsm.errors import InvalidInput, LifecycleInvalid, TransferNotAllowed
from lsm.lifecycle import LifecycleMachine, LifecycleRegistry, LifecycleSpec, Step

R: Final = "resource_based"

# (source, trigger, api target, success) -> (destination, operation, changes_desired_state, is_noop)
# Written out by hand from the table of docs/semantics.md §1 and the desired-state rule, one line per edge.
SIMPLE_EDGES: list[tuple[tuple[str, str, str | None, bool], tuple[str, str | None, bool, bool]]] = [
    (("start", "auto", None, True), ("acknowledged", None, False, False)),  # 1
    (("start", "auto", None, False), ("rejected", None, False, False)),
    (("acknowledged", "auto", None, True), ("creating", "promote", True, False)),  # 2
    (("creating", R, None, True), ("up", None, False, False)),  # 3
    (("creating", R, None, False), ("failed", None, False, False)),
    (("up", R, None, True), ("up", None, False, True)),  # 4
    (("up", R, None, False), ("failed", None, False, False)),
    (("failed", R, None, True), ("up", None, False, False)),  # 5
    (("failed", R, None, False), ("failed", None, False, True)),
    (("up", "on_update", None, True), ("update_start", None, False, False)),  # 6
    (("update_start", "auto", None, True), ("update_acknowledged", None, False, False)),  # 7
    (("update_start", "auto", None, False), ("update_rejected", None, False, False)),
    (("update_start_failed", "auto", None, True), ("update_acknowledged_failed", None, False, False)),  # 8
    (("update_start_failed", "auto", None, False), ("update_rejected_failed", None, False, False)),
    (("update_acknowledged", "auto", None, True), ("update_inprogress", "promote", True, False)),  # 9
    (("update_acknowledged_failed", "auto", None, True), ("update_inprogress", "promote", True, False)),  # 10
    (("update_inprogress", R, None, True), ("up", None, False, False)),  # 11
    (("update_inprogress", R, None, False), ("update_failed", None, False, False)),
    (("update_start", R, None, True), ("update_start", None, False, True)),  # 12
    (("update_start", R, None, False), ("update_start_failed", None, False, False)),
    (("update_start_failed", R, None, True), ("update_start", None, False, False)),  # 13
    (("update_start_failed", R, None, False), ("update_start_failed", None, False, True)),
    (("update_rejected", R, None, True), ("update_rejected", None, False, True)),  # 14
    (("update_rejected", R, None, False), ("update_rejected_failed", None, False, False)),
    (("update_rejected_failed", R, None, True), ("update_rejected", None, False, False)),  # 15
    (("update_rejected_failed", R, None, False), ("update_rejected_failed", None, False, True)),
    (("update_rejected", "api_set_state", "up", True), ("up", "clear candidate", False, False)),  # 16
    (
        ("update_rejected_failed", "api_set_state", "failed", True),
        ("failed", "clear candidate", False, False),
    ),
    (("update_failed", "api_set_state", "rollback", True), ("rollback", "rollback", True, False)),  # 18
    (("rollback", R, None, True), ("up", None, False, False)),  # 19
    (("rollback", R, None, False), ("failed", None, False, False)),
    (("update_failed", R, None, True), ("up", None, False, False)),  # 20
    (("update_failed", R, None, False), ("update_failed", None, False, True)),
    (("rejected", "on_update", None, True), ("start", None, False, False)),  # 21
    (("update_rejected", "on_update", None, True), ("update_start", None, False, False)),  # 22
    (("update_rejected_failed", "on_update", None, True), ("update_start_failed", None, False, False)),  # 23
    (("deleting", R, None, True), ("terminated", None, True, False)),  # 24
    (("deleting", R, None, False), ("deleting", None, False, True)),
    (("rejected", "on_delete", None, True), ("terminated", None, False, False)),  # 25
    (("up", "on_delete", None, True), ("deleting", None, True, False)),  # 26
    (("creating", "on_delete", None, True), ("deleting", None, True, False)),  # 27
    (("update_failed", "on_delete", None, True), ("deleting", None, True, False)),  # 28
    (("failed", "on_delete", None, True), ("deleting", None, True, False)),  # 29
    (("creating", "export_failed", None, False), ("failed", None, False, False)),  # 30
    (("update_inprogress", "export_failed", None, False), ("update_failed", None, False, False)),  # 31
    (("rollback", "export_failed", None, False), ("failed", None, False, False)),  # 32
    (("deleting", "export_failed", None, False), ("delete_failed", None, False, False)),  # 33
    (("delete_failed", R, None, True), ("terminated", None, True, False)),  # 34
    (("delete_failed", R, None, False), ("delete_failed", None, False, True)),
    # 35: the retry of a failed delete asks for the purge to be exported anew
    (("delete_failed", "on_delete", None, True), ("deleting", None, True, False)),
]


@pytest.fixture(scope="module")
def registry() -> LifecycleRegistry:
    return LifecycleRegistry.discover()


@pytest.fixture(scope="module")
def simple(registry: LifecycleRegistry) -> LifecycleMachine:
    return registry.machine("simple")


def run(machine: LifecycleMachine, state: str, trigger: Any, target: str | None, success: bool) -> Step:
    return machine.step(state, trigger, target=target, success=success)


def observed(step: Step) -> tuple[str, str | None, bool, bool]:
    return (step.destination, step.operation, step.changes_desired_state, step.is_noop)


@pytest.mark.parametrize(("call", "expected"), SIMPLE_EDGES, ids=lambda v: ":".join(map(str, v)))
def test_step_follows_every_edge_of_simple(
    simple: LifecycleMachine,
    call: tuple[str, str, str | None, bool],
    expected: tuple[str, str | None, bool, bool],
) -> None:
    state, trigger, target, success = call
    step = run(simple, state, trigger, target, success)
    assert observed(step) == expected
    assert step.source == state
    assert step.is_error is (not success)
    assert step.transfer.source == state and step.transfer.trigger == trigger


def test_every_transfer_of_simple_is_covered_by_the_edge_table(simple: LifecycleMachine) -> None:
    covered = {(c[0], c[1], c[2]) for c, _ in SIMPLE_EDGES}
    for t in simple.spec.transfers:
        assert (t.source, t.trigger, t.target if t.trigger == "api_set_state" else None) in covered, str(t)
    failable = {(c[0], c[1]) for c, _ in SIMPLE_EDGES if not c[3]}
    assert failable == {
        (t.source, t.trigger) for t in simple.spec.transfers if t.can_fail or t.trigger == "export_failed"
    }


def test_delete_validation_failure_returns_to_the_state_the_delete_came_from(
    registry: LifecycleRegistry,
) -> None:
    machine = registry.machine("simple_with_delete_validate")
    for origin in ("up", "creating", "failed", "update_failed"):
        waiting = machine.step(origin, "on_delete").destination
        assert waiting == f"delete_validating_{origin}"
        refused = machine.step(waiting, "auto", success=False)
        assert (refused.destination, refused.is_error, refused.changes_desired_state) == (origin, True, False)
        accepted = machine.step(waiting, "auto")
        assert (accepted.destination, accepted.changes_desired_state) == ("deleting", True)
        assert machine.step(waiting, R).is_noop


def tiny(transfers: list[dict[str, Any]], states: list[dict[str, Any]] | None = None) -> LifecycleMachine:
    return LifecycleMachine(
        LifecycleSpec.from_data(
            {
                "name": "tiny",
                "initial_state": "start",
                "states": states or [{"name": "start"}, {"name": "up", "export_resources": True}],
                "transfers": transfers,
            }
        )
    )


def test_a_failing_transfer_without_error_state_stays_where_it_is() -> None:
    machine = tiny([{"source": "start", "target": "up", "trigger": "auto", "validate": True}])
    step = machine.step("start", "auto", success=False)
    assert (step.destination, step.is_error, step.is_noop, step.operation) == ("start", True, True, None)


def test_an_error_operation_is_applied_on_the_error_edge() -> None:
    machine = tiny(
        [
            {
                "source": "start",
                "target": "up",
                "error": "start",
                "trigger": "auto",
                "validate": True,
                "error_operation": "clear candidate",
            }
        ]
    )
    step = machine.step("start", "auto", success=False)
    assert (step.destination, step.operation, step.is_noop) == ("start", "clear candidate", False)


@pytest.mark.parametrize(("same", "changes"), [(False, True), (True, False)])
def test_same_desired_state_flag_overrides_the_computed_change(same: bool, changes: bool) -> None:
    machine = tiny(
        [{"source": "start", "target": "up", "trigger": "auto", "target_same_desired_state": same}]
    )
    assert machine.step("start", "auto").changes_desired_state is changes


def test_clearing_the_active_set_of_an_exporting_state_changes_the_desired_state() -> None:
    states = [{"name": "start", "export_resources": True}, {"name": "up", "export_resources": True}]
    ops = {
        "promote": True,
        "rollback": True,
        "clear active": True,
        "clear candidate": False,
        "clear rollback": False,
    }
    for op, changes in ops.items():
        machine = tiny(
            [{"source": "start", "target": "up", "trigger": "on_update", "target_operation": op}], states
        )
        assert machine.step("start", "on_update").changes_desired_state is changes, op


def test_transfer_not_allowed_names_state_trigger_and_what_is_allowed(simple: LifecycleMachine) -> None:
    with pytest.raises(TransferNotAllowed) as info:
        simple.step("creating", "on_update")
    err = info.value
    assert "'creating'" in err.message and "on_update" in err.message
    assert err.details["state"] == "creating"
    assert err.details["trigger"] == "on_update"
    assert err.details["allowed"] == [
        {"trigger": "resource_based", "target": "up"},
        {"trigger": "on_delete", "target": "deleting"},
        {"trigger": "export_failed", "target": "failed"},
    ]
    assert err.status == 409


def test_api_set_state_to_a_target_without_transfer_is_refused(simple: LifecycleMachine) -> None:
    with pytest.raises(TransferNotAllowed) as info:
        simple.step("update_failed", "api_set_state", target="up")
    assert {"trigger": "api_set_state", "target": "rollback"} in info.value.details["allowed"]
    assert info.value.details["target"] == "up"


def test_failing_a_transfer_that_cannot_fail_is_refused(simple: LifecycleMachine) -> None:
    with pytest.raises(TransferNotAllowed, match="cannot fail"):
        simple.step("up", "on_update", success=False)


def test_nothing_leaves_a_deleted_state(simple: LifecycleMachine) -> None:
    with pytest.raises(TransferNotAllowed) as info:
        simple.step("terminated", "on_delete")
    assert info.value.details["allowed"] == []


def test_api_set_state_needs_a_target_and_other_triggers_take_none(simple: LifecycleMachine) -> None:
    with pytest.raises(InvalidInput):
        simple.step("update_failed", "api_set_state")
    with pytest.raises(ValueError):
        simple.step("up", "on_update", target="update_start")


def test_a_state_the_lifecycle_does_not_have_is_a_lifecycle_problem(simple: LifecycleMachine) -> None:
    with pytest.raises(LifecycleInvalid, match="no state 'limbo'"):
        simple.step("limbo", "auto")


def test_auto_transfer_update_and_delete_questions(simple: LifecycleMachine) -> None:
    auto = simple.auto_transfer("start")
    assert auto is not None and (auto.target, auto.validate) == ("acknowledged", True)
    assert simple.auto_transfer("up") is None
    updatable = {s.name for s in simple.spec.states if simple.update_allowed(s.name)}
    assert updatable == {"up", "rejected", "update_rejected", "update_rejected_failed"}
    deletable = {s.name for s in simple.spec.states if simple.delete_allowed(s.name)}
    assert deletable == {"up", "rejected", "creating", "update_failed", "failed", "delete_failed"}


def test_initial_state_accepts_only_the_initial_and_alternative_states() -> None:
    machine = LifecycleMachine(
        LifecycleSpec.from_data(
            {
                "name": "alt",
                "initial_state": "start",
                "alternative_initial_states": ["imported"],
                "states": [{"name": "start"}, {"name": "imported"}],
                "transfers": [],
            }
        )
    )
    assert machine.initial_state(None) == "start"
    assert machine.initial_state("imported") == "imported"
    with pytest.raises(InvalidInput) as info:
        machine.initial_state("up")
    assert "initial_state" in info.value.message
    assert info.value.details["allowed"] == ["start", "imported"]


@pytest.fixture
def fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_many_threads_stepping_one_machine_get_the_right_answers(fast_switching: None) -> None:
    machine = LifecycleRegistry.discover().machine("simple")  # a fresh machine with an empty pool
    threads, rounds = 16, 400
    barrier = threading.Barrier(threads)
    failures: list[str] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        barrier.wait()
        for _ in range(rounds):
            (state, trigger, target, success), expected = rng.choice(SIMPLE_EDGES)
            got = observed(run(machine, state, trigger, target, success))
            if got != expected:
                failures.append(f"{state} {trigger} {target} {success}: {got} != {expected}")

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert failures == []
