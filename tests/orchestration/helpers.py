"""A driver that walks instances through lifecycles with injected compile and deploy outcomes,
and a gate that holds the group-commit writer while a test queues work behind it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlmodel import Session

from lsm.facade import RequestContext
from lsm.orchestration import ExportFailed, ResourceOutcome, ValidationOutcome
from lsm.orchestration.group import GroupCommit
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from tests.waiting import DEFAULT_SECONDS, wait_until


def fail_the_commit(session: Session) -> None:
    """A group-commit item that makes its batch's shared commit fail (not its own savepoint)."""

    def fail(committing: Session) -> None:
        if not committing.in_nested_transaction():
            raise RuntimeError("disk gone at commit")

    event.listen(session, "before_commit", fail)


def group_of(engine: ApiRuntime) -> GroupCommit:
    """The engine's group-commit writer (its tests enable group commit)."""
    group = engine.orchestrator.group
    assert group is not None, "the API runtime enables group commit"
    return group


@contextmanager
def gated(group: GroupCommit, expected: int = 0) -> Iterator[None]:
    """Hold the writer on a gate (a work item that waits) for the block, and after it until
    ``expected`` more items are queued behind the gate; then let go."""
    entered, release = threading.Event(), threading.Event()

    def gate(_session: Session) -> None:
        entered.set()
        release.wait(DEFAULT_SECONDS)

    holder = threading.Thread(target=group.run, args=(gate,))
    holder.start()
    assert entered.wait(DEFAULT_SECONDS)
    try:
        yield
        wait_until(lambda: group._queue.qsize() >= expected, f"{expected} queued items")
    finally:
        release.set()
        holder.join(DEFAULT_SECONDS)


def in_one_batch(group: GroupCommit, calls: list[Callable[[], Any]]) -> list[Any]:
    """Run each call in a thread of its own, queued at the group-commit writer in this order
    behind a gate, so that they share one batch: each one's result or exception."""
    answers: list[Any] = [None] * len(calls)

    def call(index: int) -> None:
        try:
            answers[index] = calls[index]()
        except BaseException as exc:  # the answer under test
            answers[index] = exc

    threads = []
    with gated(group, len(calls)):
        for i in range(len(calls)):
            thread = threading.Thread(target=call, args=(i,))
            thread.start()
            threads.append(thread)
            wait_until(lambda n=i + 1: group._queue.qsize() >= n, f"call {i} queued")  # type: ignore[misc]  # mypy types no lambda default
    for thread in threads:
        thread.join(DEFAULT_SECONDS)
    return answers


def update_call(engine: ApiRuntime, ref: str, version: int, **attributes: Any) -> Callable[[], InstanceOut]:
    """An update of the ``thing`` ``ref`` through the inventory facade, to be called later."""
    return lambda: engine.facades.inventory.update_instance(
        RequestContext.local(), "thing", ref, current_version=version, attributes=attributes
    )


def outcome(instance: InstanceOut, ok: bool = True, **allocations: Any) -> ValidationOutcome:
    """The outcome of a validation compile of ``instance`` at its current version."""
    return ValidationOutcome(
        instance_id=instance.id,
        expected_version=instance.version,
        compile_id="00000000-0000-0000-0000-000000000000",
        success=ok,
        allocations=allocations,
    )


class Driver:
    """Operator requests go through the engine facade; outcomes through the orchestrator."""

    def __init__(self, engine: ApiRuntime, entity: str = "thing") -> None:
        self.engine = engine
        self.entity = entity
        self.ctx = engine.context(None)
        self.created = 0

    def get(self, instance: InstanceOut) -> InstanceOut:
        return self.engine.facades.inventory.get_instance(RequestContext.local(), self.entity, instance.id)

    def create(self, **attributes: Any) -> InstanceOut:
        self.created += 1
        attributes.setdefault("name", f"t{self.created}")
        return self.engine.facades.inventory.create_instance(RequestContext.local(), self.entity, attributes)

    def validate(self, instance: InstanceOut, ok: bool, **allocations: Any) -> InstanceOut:
        self.engine.orchestrator.execute(self.ctx, outcome(instance, ok, **allocations))
        return self.get(instance)

    def deploy(self, instance: InstanceOut, ok: bool) -> InstanceOut:
        command = ResourceOutcome(instance.id, instance.desired_state_version, ok)
        self.engine.orchestrator.execute(self.ctx, command)
        return self.get(instance)

    def export_fails(self, instance: InstanceOut) -> InstanceOut:
        command = ExportFailed(instance.id, instance.desired_state_version, "c" * 36, "export failed")
        self.engine.orchestrator.execute(self.ctx, command)
        return self.get(instance)

    def update(self, instance: InstanceOut, **attributes: Any) -> InstanceOut:
        return self.engine.facades.inventory.update_instance(
            RequestContext.local(),
            self.entity,
            instance.id,
            current_version=instance.version,
            attributes=attributes,
        )

    def delete(self, instance: InstanceOut) -> InstanceOut:
        return self.engine.facades.inventory.delete_instance(
            RequestContext.local(), self.entity, instance.id, current_version=instance.version
        )

    def set_state(self, instance: InstanceOut, target: str) -> InstanceOut:
        return self.engine.facades.inventory.set_state(
            RequestContext.local(),
            self.entity,
            instance.id,
            current_version=instance.version,
            target_state=target,
        )

    # -- paths to every stable state of `simple` ---------------------------------------------
    def reach(self, state: str) -> InstanceOut:
        paths: dict[str, tuple[str, Callable[[InstanceOut], InstanceOut]]] = {
            "rejected": ("start", lambda i: self.validate(i, False)),
            "creating": ("start", lambda i: self.validate(i, True)),
            "up": ("creating", lambda i: self.deploy(i, True)),
            "failed": ("creating", lambda i: self.deploy(i, False)),
            "update_start": ("up", lambda i: self.update(i, size=2)),
            "update_start_failed": ("update_start", lambda i: self.deploy(i, False)),
            "update_inprogress": ("update_start", lambda i: self.validate(i, True)),
            "update_rejected": ("update_start", lambda i: self.validate(i, False)),
            "update_rejected_failed": ("update_rejected", lambda i: self.deploy(i, False)),
            "update_failed": ("update_inprogress", lambda i: self.deploy(i, False)),
            "rollback": ("update_failed", lambda i: self.set_state(i, "rollback")),
            "deleting": ("up", lambda i: self.delete(i)),
            "terminated": ("deleting", lambda i: self.deploy(i, True)),
            "delete_failed": ("deleting", lambda i: self.export_fails(i)),
        }
        if state == "start":
            return self.create()
        before, action = paths[state]
        instance = action(self.reach(before))
        assert instance.state == state, f"expected {state}, got {instance.state}"
        return instance
