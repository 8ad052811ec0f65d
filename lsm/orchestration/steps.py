"""A lifecycle step as a decision: the operation, the version bump, the event line, the compile
requests that follow. Shared by every command (``lsm.orchestration.decide``) and the expert
calls (``lsm.orchestration.expert``); nothing here reads or writes the database."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsm.lifecycle import AttributeSets, Step, apply_operation
from lsm.orchestration.chain import due_auto
from lsm.orchestration.decision import Outcome
from lsm.orchestration.references import references_of
from lsm.schemas.compiles import CompileKind
from lsm.store.compiles.requests import CompileOrder, ValidationParams, compile_values
from lsm.store.instances.repository import event_values
from lsm.store.tables import InstanceRow, utcnow

if TYPE_CHECKING:
    from lsm.orchestration.decide import Decider


def current_sets(row: InstanceRow) -> AttributeSets:
    return AttributeSets(row.candidate_attributes, row.active_attributes, row.rollback_attributes)


def transition(
    d: Decider,
    row: InstanceRow,
    step: Step,
    trigger: str,
    *,
    sets: AttributeSets | None = None,
    message: str = "",
    compile_id: str | None = None,
) -> Outcome:
    """Take a lifecycle step; a self transfer that changes nothing is not one (no version bump),
    but a failure with nowhere to go is still worth a line in the log."""
    current = current_sets(row)
    new_sets = sets if sets is not None else current
    if step.is_noop and new_sets == current:
        if step.is_error:
            add_event(
                d, row, source=row.state, target=row.state, trigger=trigger, message=message,
                compile_id=compile_id, is_error=True,
            )  # fmt: skip
        return Outcome(row, executed=False, compiles=d.decision.compile_ids)
    if step.operation is not None:
        new_sets = apply_operation(step.operation, new_sets)
    move(
        d,
        row,
        destination=step.destination,
        sets=new_sets,
        changes_desired_state=step.changes_desired_state,
        trigger=trigger,
        message=message,
        compile_id=compile_id,
        is_error=step.is_error,
    )
    return Outcome(row, executed=True, compiles=d.decision.compile_ids)


def move(
    d: Decider,
    row: InstanceRow,
    *,
    destination: str,
    sets: AttributeSets,
    changes_desired_state: bool,
    trigger: str,
    message: str,
    compile_id: str | None = None,
    is_error: bool = False,
) -> None:
    """``row`` moves to ``destination`` with ``sets``: its new columns, the export it needs, its
    relation index, its event line and, on arrival, its validation compile if one is due."""
    binding = d.ctx.binding(row.entity)
    lifecycle = d.ctx.lifecycle(binding)
    source = row.state
    # the relation index follows the union of the three sets; a step that only moves values
    # between sets (promote, rollback) or changes no relation leaves it as it is
    refs_before = references_of(binding, row)
    values: dict[str, Any] = {
        "state": destination,
        "version": row.version + 1,
        "desired_state_version": row.desired_state_version + (1 if changes_desired_state else 0),
        "deleted": row.deleted or lifecycle.state(destination).deleted,
        "last_updated": utcnow(),
    }
    if not (
        sets.candidate is row.candidate_attributes
        and sets.active is row.active_attributes
        and sets.rollback is row.rollback_attributes
    ):  # the step moved an attribute set: its JSON is written too
        values["candidate_attributes"] = sets.candidate
        values["active_attributes"] = sets.active
        values["rollback_attributes"] = sets.rollback
    d.decision.take_step(row, values)
    if changes_desired_state:
        request_export(d, row, f"{binding.name} {row.id}: {source} -> {destination}")
    refs = references_of(binding, row)
    if refs != refs_before:
        d.decision.references.append((d.ctx.env_id, row.id, refs, None))
    add_event(
        d,
        row,
        source=source,
        target=destination,
        trigger=trigger,
        message=message,
        compile_id=compile_id,
        is_error=is_error,
    )
    after_entering(d, row)


def after_entering(d: Decider, row: InstanceRow) -> None:
    """A state whose auto transfer validates asks for its validation compile right away."""
    transfer = due_auto(d.ctx, row)
    if transfer is not None and transfer.validate:
        request_validation(d, row, trigger="auto", target=None)


def add_event(d: Decider, row: InstanceRow, **fields: Any) -> None:
    """An event line of ``row``, with who asked."""
    d.decision.events.append(
        event_values(row, actor=d.origin.actor, request_id=d.origin.request_id, **fields)
    )


def request_validation(d: Decider, row: InstanceRow, *, trigger: str, target: str | None) -> None:
    order = CompileOrder(
        env_id=d.ctx.env_id,
        kind=CompileKind.VALIDATION,
        instance_id=row.id,
        requested_ids=[row.id],
        reason=f"validate {row.entity} {row.id} in {row.state}",
        actor=d.origin.actor,
        request_id=d.origin.request_id,
        validation=ValidationParams(
            instance_version=row.version,
            trigger="api_set_state" if trigger == "api_set_state" else "auto",
            target=target,
        ),
    )
    enqueue(d, order)


def request_export(d: Decider, row: InstanceRow, reason: str) -> None:
    partial = d.ctx.settings.partial_compiles
    order = CompileOrder(
        env_id=d.ctx.env_id,
        kind=CompileKind.PARTIAL if partial else CompileKind.FULL,
        requested_ids=[row.id] if partial else [],
        reason=reason,
        actor=d.origin.actor,
        request_id=d.origin.request_id,
    )
    enqueue(d, order)


def enqueue(d: Decider, order: CompileOrder) -> None:
    values = compile_values(order)
    d.decision.compiles.append(values)
    d.decision.compile_ids.append(values["id"])
