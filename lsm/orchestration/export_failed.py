"""A failed export written on many instances at once: the bulk form of ``ExportFailed``.

Why: a full compile that fails (a model error, a time limit) was to export every instance that
waits on an export, 10,000 of them in ``creating`` after a large import. Taken one by one
(``Orchestrator.execute_in``), each costs a loaded row, a machine step, a version check and an
event line of its own; here the instances are sorted by what their lifecycle does with the
failure, per (entity, state), once:

* ``move``: the ``export_failed`` transfer only changes the state (no attribute-set operation,
  no desired-state change, no auto transfer or validation on arrival, not a deleted state, as
  every bundled one): locked and read back a chunk per statement, stepped a chunk per
  statement, with one event line each (one ``executemany``);
* ``log``: the state has no such transfer (or it leads back to the same state): an error line
  only, the instance stays;
* ``command``: anything else goes through ``ExportFailed`` and the general path.

When the environment's model does not load, the lifecycle of each entity is the one the
catalog persisted (``lsm_entity``, passed as ``lifecycles``): state-only moves and lines are
still written, and what would need the general path (the model's bindings) is only logged.

An instance whose state or version moved since the caller read it is left alone (the check
that the commit makes on the versions a decision read). ``Orchestrator.fail_exports`` is the entry point;
this module only sorts and writes through ``lsm.store``. Together they stay the one place
that changes an instance's state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlmodel import Session

from lsm.errors import NotFound
from lsm.lifecycle import EXPORT_FAILED, Step
from lsm.orchestration.commands import ExportFailed, Origin
from lsm.orchestration.context import EnvironmentContext
from lsm.store.compiles.export_failures import Waiting, lock_versions, move_states
from lsm.store.instances import repository as repo
from lsm.store.row_values import row_values
from lsm.store.tables import EventRow

Plan = tuple[Literal["move", "log", "command", "skip"], Step | None]


def lifecycle_name(ctx: EnvironmentContext, entity: str, lifecycles: Mapping[str, str] | None) -> str | None:
    """The lifecycle of ``entity``: its binding's, else the persisted one of ``lifecycles``
    (a model that does not load); None for an entity neither knows, or a lifecycle not loaded."""
    try:
        name: str | None = ctx.binding(entity).lifecycle
    except NotFound:
        name = (lifecycles or {}).get(entity)
    return name if name is not None and name in ctx.lifecycles.names() else None


def plan_of(
    ctx: EnvironmentContext, entity: str, state: str, lifecycles: Mapping[str, str] | None = None
) -> Plan:
    """What a failed export does to an instance of ``entity`` in ``state`` (see the module)."""
    name = lifecycle_name(ctx, entity, lifecycles)
    if name is None:
        return ("skip", None)  # an entity the model no longer binds: nothing to decide with
    machine, lifecycle = ctx.lifecycles.machine(name), ctx.lifecycles.get(name)
    if not lifecycle.has_state(state):
        return ("skip", None)
    step = machine.export_failed_step(state)
    if step is None or step.is_noop:
        return ("log", None)
    simple = (
        step.operation is None
        and not step.changes_desired_state
        and machine.auto_transfer(step.destination) is None
        and not lifecycle.state(step.destination).deleted
    )
    if simple:
        return ("move", step)
    return ("log", None) if lifecycles is not None else ("command", None)  # no model: no general path


@dataclass
class Sorted:
    """The waiting instances by what the failure does to them."""

    simple: list[tuple[Waiting, Step | None]] = field(default_factory=list)
    commands: list[ExportFailed] = field(default_factory=list)


def sort_waiting(
    ctx: EnvironmentContext,
    waiting: Sequence[Waiting],
    compile_id: str,
    message: str,
    lifecycles: Mapping[str, str] | None = None,
) -> Sorted:
    plans: dict[tuple[str, str], Plan] = {}
    found = Sorted()
    for w in waiting:
        key = (w.entity, w.state)
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = plan_of(ctx, w.entity, w.state, lifecycles)
        kind, step = plan
        if kind == "command":
            found.commands.append(ExportFailed(w.id, w.desired_state_version, compile_id, message))
        elif kind != "skip":
            found.simple.append((w, step))
    return found


def write_simple(
    session: Session,
    ctx: EnvironmentContext,
    simple: Sequence[tuple[Waiting, Step | None]],
    *,
    compile_id: str,
    message: str,
    origin: Origin,
    now: datetime,
) -> int:
    """Lock the instances, step those still as read (``move``) and write the event lines;
    how many instances were written on."""
    if not simple:
        return 0
    current = lock_versions(session, ctx.env_id, [w.id for w, _ in simple])
    moves: dict[str, list[str]] = {}
    events: list[dict[str, Any]] = []
    for w, step in simple:
        if current.get(w.id) != (w.state, w.version, False):
            continue  # moved on (or deleted) since it was read: that change wins
        target = w.state if step is None else step.destination
        version = w.version if step is None else w.version + 1
        if step is not None:
            moves.setdefault(target, []).append(w.id)
        events.append(
            row_values(
                EventRow,
                env_id=ctx.env_id,
                instance_id=w.id,
                version=version,
                source=w.state,
                target=target,
                trigger=EXPORT_FAILED,
                message=message,
                compile_id=compile_id,
                is_error=True,
                actor=origin.actor,
                request_id=origin.request_id,
                created_at=now,
            )
        )
    move_states(session, moves, now)
    repo.insert_events(session, events)
    return len(events)
