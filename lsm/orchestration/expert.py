"""Expert mode: the operator's way out of any state, inside the one state-changing transaction.

Why here and not in the API: an expert call is a transfer like any other (version check,
attribute sets, version bump, event line, compile request, one commit), only without the
lifecycle's permission. ``Orchestrator.execute`` decides and commits it; this module holds what
only expert calls decide on top of a step:

* the gate, read from the environment row inside the write transaction: while the setting
  ``expert_mode`` is off the call is a 409 ``expert_mode_off`` naming the setting, and a
  setting switched off by another process can not be raced past;
* a non-empty reason (422 naming ``reason``), written on the ``expert`` event-log line and on
  an audit record (``lsm_audit``, action ``expert.<what>``) with the actor, written by the
  same commit: the audit trail and the log can not disagree about what was done.

Roles are the API's business (expert routes need the admin role, ``lsm.api.expert``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsm.catalog import validate_attributes
from lsm.errors import ExpertModeOff, InvalidAttributes, InvalidInput, RuleViolation
from lsm.lifecycle import AttributeSets
from lsm.orchestration.commands import ATTRIBUTE_SETS, ForceAttributes, ForceDestroy
from lsm.orchestration.decision import Outcome
from lsm.orchestration.references import check_references
from lsm.orchestration.steps import move
from lsm.schemas.expert import MAX_REASON_LENGTH
from lsm.store.environments.settings import parse_settings
from lsm.store.tables import EnvironmentRow, InstanceRow

if TYPE_CHECKING:
    from lsm.orchestration.decide import Decider

#: the environment setting that allows expert calls
SETTING = "expert_mode"
#: the trigger of an expert step's event-log line
TRIGGER = "expert"


def check_reason(reason: str | None) -> str:
    """The reason of an expert call, stripped; 422 naming ``reason`` when it is missing or empty."""
    text = (reason or "").strip()
    if not text:
        raise InvalidInput("an expert call needs a reason (a non-empty 'reason')", field="reason")
    if len(text) > MAX_REASON_LENGTH:
        raise InvalidInput(f"the reason is longer than {MAX_REASON_LENGTH} characters", field="reason")
    return text


def check_enabled(tx: Decider) -> None:
    """Refuse (409 ``expert_mode_off``) unless the environment's ``expert_mode`` is on, as
    committed now (not as a cached context last saw it)."""
    env = tx.session.get(EnvironmentRow, tx.ctx.env_id)
    settings = parse_settings(env.settings if env is not None else {})
    if not settings.expert_mode:
        raise ExpertModeOff(
            f"expert mode is off in environment {tx.ctx.name!r}: "
            f"an admin can turn on the setting {SETTING!r}",
            setting=SETTING,
            environment=tx.ctx.name,
        )


def begin(tx: Decider, reason: str | None) -> str:
    """What every expert call checks first: its reason, then the gate. The reason."""
    text = check_reason(reason)
    check_enabled(tx)
    return text


def record(tx: Decider, row: InstanceRow, what: str, reason: str, **details: Any) -> None:
    """The audit record of an expert step on ``row``, written with the step."""
    tx.decision.audits.append(
        {
            "actor": tx.origin.actor,
            "request_id": tx.origin.request_id,
            "action": f"expert.{what}",
            "target": row.id,
            "env_id": tx.ctx.env_id,
            "entity": row.entity,
            "reason": reason,
            **details,
        }
    )


def force_attributes(tx: Decider, command: ForceAttributes) -> Outcome:
    """Replace the given attribute sets, each checked against the entity's schema (not its
    modifiers: an expert may write ``r`` attributes); the identity and the owner relation can
    not change (they are keys of the inventory). The active set of an exporting state is what
    the desired state holds: changing it queues an export, as a promote would."""
    reason = begin(tx, command.reason)
    unknown = sorted(set(command.sets) - set(ATTRIBUTE_SETS))
    if unknown or not command.sets:
        raise InvalidInput(
            f"give at least one of {', '.join(ATTRIBUTE_SETS)}"
            + (f"; unknown: {', '.join(unknown)}" if unknown else ""),
            field="sets" if not unknown else unknown[0],
        )
    row = tx.find(command.entity, command.ref, command.current_version)
    binding = tx.ctx.binding(row.entity)
    current = {"candidate": row.candidate_attributes, "active": row.active_attributes}
    current["rollback"] = row.rollback_attributes
    new = dict(current)
    errors: list[dict[str, str]] = []
    fixed = [a for a in (binding.identity, binding.relation_to_owner) if a is not None]
    for name, value in sorted(command.sets.items()):
        if value is None:
            new[name] = None
            continue
        try:
            checked = validate_attributes(binding.entity, value) if isinstance(value, dict) else None
        except InvalidAttributes as exc:
            errors += [{**e, "path": f"{name}.{e['path']}"} for e in exc.errors]
            continue
        if checked is None:
            errors.append({"path": name, "reason": "must be an object or null"})
            continue
        was = next((s for s in (current[name], row.candidate_attributes, row.active_attributes) if s), None)
        errors += [
            {"path": f"{name}.{attr}", "reason": "the identity and the owner relation can not change"}
            for attr in fixed
            if was is not None and str(checked.get(attr)) != str(was.get(attr))
        ]
        new[name] = checked
    if errors:
        raise InvalidAttributes(errors)
    for name in sorted(command.sets):
        written = new[name]
        if written:
            check_references(tx.session, tx.ctx, binding, written, seen=tx.saw, known=tx.decision.created)
    sets = AttributeSets(candidate=new["candidate"], active=new["active"], rollback=new["rollback"])
    lifecycle = tx.ctx.lifecycle(binding)
    changes = lifecycle.state(row.state).export_resources and new["active"] != row.active_attributes
    given = ", ".join(sorted(command.sets))
    record(tx, row, "attributes", reason, sets=sorted(command.sets), state=row.state)
    message = f"{given} set: {reason}"
    move(
        tx,
        row,
        destination=row.state,
        sets=sets,
        changes_desired_state=changes,
        trigger=TRIGGER,
        message=message,
    )
    return Outcome(row, executed=True, compiles=tx.decision.compile_ids)


def force_destroy(tx: Decider, command: ForceDestroy) -> Outcome:
    """Move the instance to its lifecycle's deleted state at once: no validation, no deploy
    waited for, no handler run. With ``purge_resources`` the export of its tree is queued in
    the same transaction (a deleted instance exports nothing: its resources leave the desired
    state and the agents forget them, leaving them on their targets as they are); without it
    the desired state is not touched, and its resources stay deployed until an export that
    covers its tree (a later partial compile of it, a full compile) leaves them out."""
    reason = begin(tx, command.reason)
    row = tx.find(command.entity, command.ref, command.current_version)
    lifecycle = tx.ctx.lifecycle(tx.ctx.binding(row.entity))
    ends = [s.name for s in lifecycle.states if s.deleted]
    if not ends:
        raise RuleViolation(
            f"lifecycle {lifecycle.name!r} has no deleted state to destroy into", lifecycle=lifecycle.name
        )
    source = row.state
    sets = AttributeSets(row.candidate_attributes, row.active_attributes, row.rollback_attributes)
    purge = command.purge_resources
    record(tx, row, "destroy", reason, state=source, target_state=ends[0], purge_resources=purge)
    how = "resources purged from the desired state" if purge else "resources left in the desired state"
    message = f"destroyed ({how}): {reason}"
    move(
        tx, row, destination=ends[0], sets=sets, changes_desired_state=purge, trigger=TRIGGER, message=message
    )
    return Outcome(row, executed=True, compiles=tx.decision.compile_ids)
