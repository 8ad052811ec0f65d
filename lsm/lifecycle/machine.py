"""The lifecycle as a running state machine: the one module that imports ``transitions``.

A ``LifecycleMachine`` answers "this instance is in state S and trigger T happened (with this
outcome): where does it go, with which attribute-set operation, and does that change the
desired state?". It does not change anything itself: ``lsm.orchestration`` applies the answer
in one transaction. A step runs for every instance change, from many threads at once, so:

* one ``transitions.Machine`` is built per lifecycle, with one trigger per (transfer, outcome)
  edge: ``on_update``, ``on_delete``, ``auto``, ``auto:error``, ``resource_based``,
  ``resource_based:error``, ``export_failed:error`` (a failed export has only an error
  outcome: ``step(state, "export_failed", success=False)``), ``api_set_state:<target>``,
  ``api_set_state:<target>:error``;
* each edge's ``Step`` is computed once when the machine is built, and the edge's ``after``
  callback hands it to the model that fired it;
* a step borrows a tiny model object from a pool, sets it to the instance's state, fires the
  trigger and returns the model. Models are never shared between threads while in use, and
  the machine itself is only read after it is built, so no lock is held on the hot path.
  A step's time is nearly all inside ``transitions``; a bare ``Machine.get_transitions``
  lookup would be cheaper, but would not run the machine's edges.

Example::

    machine = LifecycleMachine(spec)
    step = machine.step("creating", "resource_based", success=False)
    step.destination, step.is_error  # ("failed", True)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from queue import Empty, SimpleQueue
from typing import Any, get_args

from transitions import Machine

from lsm.errors import InvalidInput, LifecycleInvalid, TransferNotAllowed
from lsm.lifecycle.spec import EXPORT_FAILED, LifecycleSpec, Operation, TransferSpec, Trigger

TRIGGERS: tuple[str, ...] = get_args(Trigger)

#: Operations that change the active attribute set, which is what an exporting compile uses.
ACTIVE_CHANGING: frozenset[str] = frozenset({"promote", "rollback", "clear active"})


@dataclass(frozen=True, slots=True)
class Step:
    """The outcome of one trigger in one state; what the orchestrator must apply."""

    transfer: TransferSpec
    source: str
    destination: str
    is_error: bool
    operation: Operation | None
    changes_desired_state: bool
    #: A self transfer without an operation is not executed: no version bump, no event.
    is_noop: bool


def edge_trigger(trigger: str, target: str | None = None, *, error: bool = False) -> str:
    """The transitions trigger name of one edge, e.g. ``api_set_state:up:error``."""
    name = f"{trigger}:{target}" if trigger == "api_set_state" else trigger
    return f"{name}:error" if error else name


def changes_desired_state(spec: LifecycleSpec, source: str, destination: str, operation: str | None) -> bool:
    """Whether moving ``source -> destination`` with ``operation`` changes what is exported.

    The desired state depends on whether the instance exports, whether it purges, and on its
    active attributes; nothing else. One rule for lifecycle steps and expert force alike.
    """
    src, dst = spec.state(source), spec.state(destination)
    return src.export_resources != dst.export_resources or (
        dst.export_resources and (src.purge_resources != dst.purge_resources or operation in ACTIVE_CHANGING)
    )


def _make_step(spec: LifecycleSpec, transfer: TransferSpec, is_error: bool) -> Step:
    if transfer.trigger == EXPORT_FAILED:  # the transfer is itself an error outcome: its target
        destination = transfer.target
        operation, same = transfer.target_operation, transfer.target_same_desired_state
    elif is_error:
        # A failable transfer without an error state stays where it is.
        destination = transfer.error or transfer.source
        operation, same = transfer.error_operation, transfer.error_same_desired_state
    else:
        destination = transfer.target
        operation, same = transfer.target_operation, transfer.target_same_desired_state
    changes = not same and changes_desired_state(spec, transfer.source, destination, operation)
    return Step(
        transfer=transfer,
        source=transfer.source,
        destination=destination,
        is_error=is_error,
        operation=operation,
        changes_desired_state=changes or (not is_error and transfer.request_export),
        is_noop=destination == transfer.source and operation is None and not transfer.request_export,
    )


def _outcomes(transfer: TransferSpec) -> tuple[bool, ...]:
    """The outcomes (``is_error``) a transfer has an edge for: a failed export's only error."""
    if transfer.trigger == EXPORT_FAILED:
        return (True,)
    return (False, True) if transfer.can_fail else (False,)


class _Token:
    """The model object transitions moves around; one per concurrent step, pooled."""

    state: str
    step: Step | None = None


def _record(step: Step, event_data: Any) -> None:
    event_data.model.step = step


class LifecycleMachine:
    """A lifecycle's transitions machine plus the questions the orchestrator and API ask of it."""

    def __init__(self, spec: LifecycleSpec) -> None:
        self.spec = spec
        self._machine: Any = Machine(
            model=None,
            states=[s.name for s in spec.states],
            initial=spec.initial_state,
            auto_transitions=False,
            send_event=True,
            ignore_invalid_triggers=False,
            name=f"lifecycle {spec.name}",
        )
        for transfer in spec.transfers:
            for is_error in _outcomes(transfer):
                step = _make_step(spec, transfer, is_error)
                self._machine.add_transition(
                    trigger=edge_trigger(transfer.trigger, transfer.target, error=is_error),
                    source=transfer.source,
                    dest=step.destination,
                    after=partial(_record, step),
                )
        self._pool: SimpleQueue[_Token] = SimpleQueue()
        self._pool_lock = threading.Lock()
        self._auto = {t.source: t for t in spec.transfers if t.trigger == "auto"}
        self._updatable = {t.source for t in spec.transfers if t.trigger == "on_update"}
        self._deletable = {t.source for t in spec.transfers if t.trigger == "on_delete"}
        self._export_failed = {
            t.source: _make_step(spec, t, True) for t in spec.transfers if t.trigger == EXPORT_FAILED
        }

    @property
    def name(self) -> str:
        return self.spec.name

    def step(self, state: str, trigger: Trigger, *, target: str | None = None, success: bool = True) -> Step:
        """Where ``trigger`` (with this outcome) takes an instance in ``state``.

        ``target`` names the requested state for ``api_set_state`` (and only for it);
        ``success=False`` is a failed validation or deploy and takes the ``error`` edge.
        Raises TransferNotAllowed (409) listing what ``state`` does allow.
        """
        self._known_state(state)
        if trigger == "api_set_state":
            if target is None:
                raise InvalidInput("api_set_state needs a target state", field="target", state=state)
        elif target is not None:
            raise ValueError(f"target is only meaningful for api_set_state, not {trigger!r}")
        event = self._machine.events.get(edge_trigger(trigger, target, error=not success))
        if event is None or state not in event.transitions:
            raise self._not_allowed(state, trigger, target, success)
        token = self._borrow(state)
        try:
            token.step = None
            self._machine.set_state(state, model=token)
            event.trigger(token)
            step = token.step
        finally:
            self._pool.put(token)
        if step is None:  # pragma: no cover - transitions fired no edge although one is defined
            raise RuntimeError(f"lifecycle {self.name!r}: trigger {trigger!r} fired no edge in {state!r}")
        return step

    def auto_transfer(self, state: str) -> TransferSpec | None:
        """The transfer that fires as soon as an instance enters ``state``, if any."""
        self._known_state(state)
        return self._auto.get(state)

    def allowed(self, state: str) -> list[dict[str, str]]:
        """Every ``{"trigger", "target"}`` leaving ``state``, in definition order."""
        self._known_state(state)
        return [{"trigger": t.trigger, "target": t.target} for t in self.spec.transfers_from(state)]

    def update_allowed(self, state: str) -> bool:
        """Attribute updates are refused in states without an on_update transfer."""
        self._known_state(state)
        return state in self._updatable

    def delete_allowed(self, state: str) -> bool:
        """Deletes are refused in states without an on_delete transfer."""
        self._known_state(state)
        return state in self._deletable

    def has_export_failed(self, state: str) -> bool:
        """Whether ``state`` has a transfer for a failed export (else the failure is only logged)."""
        self._known_state(state)
        return state in self._export_failed

    def export_failed_step(self, state: str) -> Step | None:
        """The step of a failed export in ``state`` (``step(state, "export_failed",
        success=False)``), or None without such a transfer. A lookup of the step computed when
        the machine was built: a failed full compile asks it for thousands of instances."""
        self._known_state(state)
        return self._export_failed.get(state)

    def initial_state(self, requested: str | None = None) -> str:
        """The state a new instance starts in: the initial one or a requested alternative."""
        if requested is None:
            return self.spec.initial_state
        if requested in self.spec.initial_states:
            return requested
        raise InvalidInput(
            f"initial_state {requested!r} is not allowed by lifecycle {self.name!r}; "
            f"allowed: {', '.join(self.spec.initial_states)}",
            field="initial_state",
            initial_state=requested,
            allowed=self.spec.initial_states,
        )

    def _known_state(self, state: str) -> None:
        # An instance stored in a state its lifecycle no longer has: the definition is at fault.
        if not self.spec.has_state(state):
            raise LifecycleInvalid(
                f"lifecycle {self.name!r} has no state {state!r}",
                rule="unknown_state",
                lifecycle=self.name,
                state=state,
            )

    def _borrow(self, state: str) -> _Token:
        try:
            return self._pool.get_nowait()
        except Empty:
            token = _Token()
            with self._pool_lock:  # add_model appends to the machine's model list
                self._machine.add_model(token, initial=state)
            return token

    def _not_allowed(self, state: str, trigger: str, target: str | None, success: bool) -> TransferNotAllowed:
        allowed = self.allowed(state)
        what = f"{trigger} transfer" + (f" to {target!r}" if target is not None else "")
        if not success and any(
            t.trigger == trigger and (target is None or t.target == target)
            for t in self.spec.transfers_from(state)
        ):
            what = f"failing {what} (it cannot fail)"
        listing = ", ".join(f"{a['trigger']} -> {a['target']}" for a in allowed) or "nothing"
        details: dict[str, Any] = {
            "state": state,
            "trigger": trigger,
            "allowed": allowed,
            "lifecycle": self.name,
        }
        if target is not None:
            details["target"] = target
        return TransferNotAllowed(
            f"no {what} from state {state!r} in lifecycle {self.name!r}; allowed: {listing}", **details
        )
