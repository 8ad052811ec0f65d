"""Deciding a command: what it reads, and the ``Decision`` it comes to. Nothing here writes.

Why apart from the commit: the same decision is taken on a read snapshot before the write lock
(a group-commit item, a batch of outcomes) or inside the write transaction (a create, an expert
call, a decision that the commit found stale), and written by the same ``commit``. Every
instance row read is recorded with its version (``Decision.saw``): that is what the commit
checks. A command that refers to instances the same decision creates (a batch) finds them in
the decision, not in the database.

The checks a command makes are those of docs/semantics.md: ``current_version`` (409 on a
mismatch), attributes against their modifiers (422 naming the attribute), identity uniqueness
(409 naming the clash), relations (422), and the lifecycle's permission for the step.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlmodel import Session

from lsm.catalog import identity_value, validate_create, validate_server_write, validate_update
from lsm.errors import (
    Conflict,
    IdentityConflict,
    InvalidAttributes,
    InvalidInput,
    TransferNotAllowed,
    UnknownInstance,
    VersionConflict,
)
from lsm.lifecycle import (
    EXPORT_FAILED,
    AttributeSets,
    LifecycleMachine,
    apply_operation,
    changes_desired_state,
)
from lsm.orchestration import expert
from lsm.orchestration.chain import due_auto
from lsm.orchestration.commands import (
    Auto,
    Command,
    Create,
    Delete,
    ExportFailed,
    ForceAttributes,
    ForceDestroy,
    ForceState,
    Origin,
    ResourceOutcome,
    SetState,
    Update,
    ValidationOutcome,
)
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.decision import Decision, Outcome
from lsm.orchestration.references import check_references, references_of
from lsm.orchestration.steps import (
    add_event,
    after_entering,
    current_sets,
    move,
    request_export,
    request_validation,
    transition,
)
from lsm.store.discovery.statements import check_adoptable
from lsm.store.instances import repository as repo
from lsm.store.tables import InstanceRow, utcnow


class Decider:
    """Decides commands of one environment, reading through ``session``, into ``decision``."""

    def __init__(self, session: Session, ctx: EnvironmentContext, origin: Origin) -> None:
        self.session = session
        self.ctx = ctx
        #: who the step is decided for (a validation outcome adopts its compile's request id)
        self.origin = origin
        self.decision = Decision()

    # -- reads -----------------------------------------------------------------------------------
    def saw(self, row: InstanceRow) -> None:
        self.decision.saw(row)

    def prefetch(self, instance_ids: Iterable[str]) -> None:
        """Read many instances in a few statements, ahead of commands that address them by id
        (a batch of outcomes, the automatic transfers after them)."""
        held = self.decision
        ids = [i for i in dict.fromkeys(instance_ids) if i not in held.rows and i not in held.created]
        if ids:
            for row in repo.get_instances(self.session, self.ctx.env_id, ids).values():
                self.saw(row)

    def by_id(self, instance_id: str) -> InstanceRow:
        """The instance, as this decision knows it (read now if it was not yet)."""
        self.prefetch([instance_id])
        row = self.decision.created.get(instance_id) or self.decision.rows.get(instance_id)
        if row is None:
            raise UnknownInstance(f"no instance {instance_id!r}", instance=instance_id)
        return row

    def find(self, entity: str, ref: str, current_version: int) -> InstanceRow:
        """The live instance ``ref`` of ``entity``, at ``current_version`` (409 otherwise)."""
        binding = self.ctx.binding(entity)
        row = self._created(binding.name, binding.identity, ref)
        if row is None:
            row = repo.find_instance(
                self.session, self.ctx.env_id, binding.name, ref, identity_attr=binding.identity
            )
            self.saw(row)
        if row.version != current_version:
            raise VersionConflict(
                f"{binding.name} {row.id} is at version {row.version}, not {current_version}",
                instance=row.id,
                current_version=row.version,
                given_version=current_version,
            )
        if row.deleted:
            raise TransferNotAllowed(
                f"{binding.name} {row.id} is deleted (state {row.state})",
                instance=row.id,
                state=row.state,
                allowed=[],
            )
        return row

    def _created(self, entity: str, identity_attr: str | None, ref: str) -> InstanceRow | None:
        """``ref`` among the instances this decision creates (by id, or by the identity)."""
        if not self.decision.created:
            return None
        instance_id, identity = repo.parse_ref(ref)
        if instance_id is None and ref.partition("=")[0] != identity_attr:
            return None  # not an identity reference: the lookup in the database says why
        for row in self.decision.created.values():
            if row.entity != entity:
                continue
            if row.id == instance_id or (
                instance_id is None and row.identity == identity and not row.deleted
            ):
                return row
        return None

    def machine(self, row: InstanceRow) -> LifecycleMachine:
        return self.ctx.machine(self.ctx.binding(row.entity))

    # -- commands --------------------------------------------------------------------------------
    def run(self, command: Command) -> Outcome:
        outcome = self.dispatch(command)
        outcome.origin = self.origin
        return outcome

    def dispatch(self, command: Command) -> Outcome:
        match command:
            case Create():
                return self.create(command)
            case Update():
                return self.update(command)
            case Delete():
                row = self.find(command.entity, command.ref, command.current_version)
                step = self.machine(row).step(row.state, "on_delete")
                return transition(self, row, step, "on_delete")
            case SetState():
                return self.set_state(command)
            case Auto():
                return self.auto(command)
            case ValidationOutcome():
                return self.validation_outcome(command)
            case ResourceOutcome():
                return self.resource_outcome(command)
            case ExportFailed():
                return self.export_failed(command)
            case ForceState():
                return self.force_state(command)
            case ForceAttributes():
                return expert.force_attributes(self, command)
            case ForceDestroy():
                return expert.force_destroy(self, command)
        raise TypeError(f"unknown command {command!r}")

    def create(self, command: Create) -> Outcome:
        binding = self.ctx.binding(command.entity)
        attributes = validate_create(binding.entity, command.attributes)
        state = self.ctx.machine(binding).initial_state(command.initial_state)
        instance_id = command.instance_id if command.drawn and command.instance_id else None
        instance_id = instance_id or self.new_instance_id(command.instance_id)
        identity = identity_value(attributes, binding.identity)
        if identity is not None:
            clash = self._created(binding.name, binding.identity, f"{binding.identity}={identity}")
            if clash is None:
                clash = repo.identity_taken(self.session, self.ctx.env_id, binding.name, identity)
                if clash is not None and clash.deleted:  # deleted by this decision: its value is free
                    clash = None
            if clash is not None:
                raise IdentityConflict(
                    f"{binding.name} with {binding.identity}={identity!r} already exists: {clash.id}",
                    entity=binding.name,
                    attribute=binding.identity,
                    value=identity,
                    instance=clash.id,
                )
        check_references(
            self.session, self.ctx, binding, attributes, seen=self.saw, known=self.decision.created
        )
        if command.adopts is not None:
            self.adopt(command.adopts, instance_id=instance_id, entity=binding.name)
        owner_id = str(attributes[binding.relation_to_owner]) if binding.relation_to_owner else None
        row = InstanceRow(
            id=instance_id,
            env_id=self.ctx.env_id,
            entity=binding.name,
            state=state,
            version=1,
            candidate_attributes=attributes,
            identity=identity,
            owner_id=owner_id,
        )
        self.decision.created[row.id] = row
        lifecycle = self.ctx.lifecycle(binding)
        if lifecycle.state(state).export_resources:
            row.desired_state_version = 1
            request_export(self, row, f"created in exporting state {state}")
        # a new id: nothing refers from it yet, so the index is not read
        self.decision.references.append((self.ctx.env_id, row.id, references_of(binding, row), set()))
        trigger, message = ("create", "created")
        if command.adopts is not None:
            trigger, message = ("adopt", f"adopted discovered resource {command.adopts}")
        add_event(self, row, source=None, target=state, trigger=trigger, message=message)
        after_entering(self, row)
        return Outcome(row, executed=True, compiles=self.decision.compile_ids)

    def adopt(self, resource_id: str, *, instance_id: str, entity: str) -> None:
        """The adoption of a discovered resource, checked now (404 or 409 naming it), recorded
        by the commit."""
        if any(a["resource_id"] == resource_id for a in self.decision.adoptions):
            raise Conflict(f"discovered resource {resource_id} is already adopted", resource_id=resource_id)
        check_adoptable(self.session, self.ctx.env_id, resource_id)
        self.decision.adoptions.append(
            {
                "env_id": self.ctx.env_id,
                "resource_id": resource_id,
                "instance_id": instance_id,
                "entity": entity,
                "now": utcnow(),
            }
        )

    def update(self, command: Update) -> Outcome:
        row = self.find(command.entity, command.ref, command.current_version)
        binding = self.ctx.binding(row.entity)
        step = self.machine(row).step(row.state, "on_update")
        base = row.candidate_attributes if row.candidate_attributes is not None else row.active_attributes
        candidate = validate_update(binding.entity, dict(base or {}), command.attributes)
        check_references(
            self.session,
            self.ctx,
            binding,
            candidate,
            changed=set(command.attributes),
            seen=self.saw,
            known=self.decision.created,
        )
        sets = AttributeSets(
            candidate=candidate, active=row.active_attributes, rollback=row.rollback_attributes
        )
        return transition(self, row, step, "on_update", sets=sets, message="attributes updated")

    def set_state(self, command: SetState) -> Outcome:
        row = self.find(command.entity, command.ref, command.current_version)
        step = self.machine(row).step(row.state, "api_set_state", target=command.target_state)
        if step.transfer.validate:
            request_validation(self, row, trigger="api_set_state", target=command.target_state)
            return Outcome(row, executed=False, compiles=self.decision.compile_ids)
        return transition(self, row, step, "api_set_state", message=command.message)

    def auto(self, command: Auto) -> Outcome:
        row = self.by_id(command.instance_id)
        if row.version != command.expected_version:
            return Outcome(row)  # something else moved it on first: that change wins
        transfer = due_auto(self.ctx, row)
        if transfer is None or transfer.validate:
            return Outcome(row)
        step = self.machine(row).step(row.state, "auto")
        return transition(self, row, step, "auto")

    def validation_outcome(self, command: ValidationOutcome) -> Outcome:
        if self.origin.request_id is None and command.request_id is not None:
            self.origin = Origin(self.origin.actor, command.request_id)  # the compile's cause
        row = self.by_id(command.instance_id)
        if row.version != command.expected_version:
            return Outcome(row)  # validated attributes are stale; a newer request follows
        binding = self.ctx.binding(row.entity)
        step = self.machine(row).step(
            row.state, command.trigger, target=command.target, success=command.success
        )
        sets = None
        if command.success and command.allocations:
            current = row.candidate_attributes if row.candidate_attributes is not None else {}
            candidate = validate_server_write(binding.entity, dict(current), command.allocations)
            sets = AttributeSets(
                candidate=candidate, active=row.active_attributes, rollback=row.rollback_attributes
            )
        message = command.message or ("validation succeeded" if command.success else "validation failed")
        return transition(
            self, row, step, "validate", sets=sets, message=message, compile_id=command.compile_id
        )

    def resource_outcome(self, command: ResourceOutcome) -> Outcome:
        row = self.by_id(command.instance_id)
        if row.desired_state_version != command.desired_state_version or row.deleted:
            return Outcome(row)  # a deploy of an older desired state says nothing of this one
        step = self.machine(row).step(row.state, "resource_based", success=command.success)
        message = command.message or ("resources deployed" if command.success else "resource deploy failed")
        return transition(self, row, step, "resource_based", message=message)

    def export_failed(self, command: ExportFailed) -> Outcome:
        """The lifecycle's ``export_failed`` transfer; in a state without one, an error line only
        (the instance waited on the export all the same: its log must say why nothing came)."""
        row = self.by_id(command.instance_id)
        if row.desired_state_version != command.desired_state_version or row.deleted:
            return Outcome(row)  # moved on since: that export said nothing of its desired state
        machine = self.machine(row)
        if not machine.has_export_failed(row.state):
            add_event(
                self, row, source=row.state, target=row.state, trigger=EXPORT_FAILED,
                message=command.message, compile_id=command.compile_id, is_error=True,
            )  # fmt: skip
            return Outcome(row, executed=False, compiles=self.decision.compile_ids)
        step = machine.step(row.state, EXPORT_FAILED, success=False)
        return transition(
            self, row, step, EXPORT_FAILED, message=command.message, compile_id=command.compile_id
        )

    def force_state(self, command: ForceState) -> Outcome:
        reason = None if command.reason is None else expert.begin(self, command.reason)
        row = self.find(command.entity, command.ref, command.current_version)
        lifecycle = self.ctx.lifecycle(self.ctx.binding(row.entity))
        if not lifecycle.has_state(command.target_state):
            raise InvalidInput(
                f"{command.target_state!r} is not a state of lifecycle {lifecycle.name!r}",
                field="state",
                target_state=command.target_state,
                known=[s.name for s in lifecycle.states],
            )
        sets = current_sets(row)
        if command.operation:
            sets = apply_operation(command.operation, sets)
        changes = changes_desired_state(lifecycle, row.state, command.target_state, command.operation)
        message = command.message
        if reason is not None:
            expert.record(self, row, "state", reason, state=row.state, target_state=command.target_state)
            message = f"{message}: {reason}" if message else reason
        move(
            self,
            row,
            destination=command.target_state,
            sets=sets,
            changes_desired_state=changes,
            trigger=expert.TRIGGER,
            message=message,
        )
        return Outcome(row, executed=True, compiles=self.decision.compile_ids)

    def new_instance_id(self, requested: str | None) -> str:
        if requested is None:
            return str(uuid.uuid4())
        try:
            instance_id = str(uuid.UUID(requested))
        except (ValueError, AttributeError, TypeError):
            raise InvalidAttributes([{"path": "service_instance_id", "reason": "must be a UUID"}]) from None
        if instance_id in self.decision.created or self.session.get(InstanceRow, instance_id) is not None:
            raise Conflict(f"instance id {instance_id} is already used", instance=instance_id)
        return instance_id
