"""The requests that can change an instance's state, one dataclass per kind of transfer.

Why: the orchestrator has exactly one entry point; what differs between an operator's update,
a validation outcome and a deploy result is data, not a separate code path that could forget
the version check or the event line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from lsm.lifecycle import Operation


@dataclass(frozen=True)
class Create:
    """A new instance. With ``adopts`` (a discovered resource id) it adopts that resource: the
    adoption is recorded in the same transaction (refused, 409 naming the id, when the id is
    managed or adopted already) and the event line's trigger is ``adopt``."""

    entity: str
    attributes: dict[str, Any]
    instance_id: str | None = None
    initial_state: str | None = None
    adopts: str | None = None
    #: ``instance_id`` is a fresh ``uuid4`` the engine drew (an order's create, whose id its
    #: ``$ref``s need before it is decided), not a caller's choice: no row can hold it, so it is
    #: not looked up (one read per create of a 1,000-item order)
    drawn: bool = False


@dataclass(frozen=True)
class Update:
    entity: str
    ref: str
    current_version: int
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Delete:
    entity: str
    ref: str
    current_version: int


@dataclass(frozen=True)
class SetState:
    entity: str
    ref: str
    current_version: int
    target_state: str
    message: str = ""


@dataclass(frozen=True)
class Auto:
    """Fire the auto transfer of the state the instance is in, if it is still at ``expected_version``."""

    instance_id: str
    expected_version: int


@dataclass(frozen=True)
class ValidationOutcome:
    """The result of a validation compile for one instance, requested at ``expected_version``."""

    instance_id: str
    expected_version: int
    compile_id: str
    success: bool
    message: str = ""
    trigger: Literal["auto", "api_set_state"] = "auto"
    target: str | None = None
    allocations: dict[str, Any] = field(default_factory=dict)
    #: the request that caused the compile (its row's ``request_id``), when known: the step is
    #: recorded under it. The worker has it on the claimed row; reading it back here cost a
    #: whole compile row per validated instance.
    request_id: str | None = None


@dataclass(frozen=True)
class ResourceOutcome:
    """All resources of the instance reached a final state for ``desired_state_version``."""

    instance_id: str
    desired_state_version: int
    success: bool
    message: str = ""


@dataclass(frozen=True)
class ExportFailed:
    """The exporting compile ``compile_id`` that was to export the instance's desired state
    ``desired_state_version`` failed: its lifecycle's ``export_failed`` transfer fires, or,
    in a state without one, the failure is only written in its event log.

    ``message`` names the cause (the error kind, the export rule, the resources and sets)."""

    instance_id: str
    desired_state_version: int
    compile_id: str
    message: str


@dataclass(frozen=True)
class ForceState:
    """Expert mode: move an instance to any state of its lifecycle, optionally with an operation.

    With a ``reason`` it is an operator's expert call (``lsm.orchestration.expert``): refused
    while the environment's ``expert_mode`` is off, and audited with the reason; without one
    it is the engine's (or a test's) own force, unaudited."""

    entity: str
    ref: str
    current_version: int
    target_state: str
    operation: Operation | None = None
    message: str = ""
    reason: str | None = None


#: the attribute sets an expert may write (``ForceAttributes``)
ATTRIBUTE_SETS = ("candidate", "active", "rollback")


@dataclass(frozen=True)
class ForceAttributes:
    """Expert mode: replace some of an instance's attribute sets (``ATTRIBUTE_SETS``), state
    unchanged; ``sets`` maps a set's name to its new value (``None`` empties it). Each value
    is checked against the entity's schema, not against the attribute modifiers."""

    entity: str
    ref: str
    current_version: int
    sets: dict[str, dict[str, Any] | None]
    reason: str


@dataclass(frozen=True)
class ForceDestroy:
    """Expert mode: terminate an instance without its lifecycle (no validation, no deploy
    waited for). ``purge_resources``: queue the export of its tree that takes its resources out
    of the desired state now; otherwise they stay there until an export covers its tree."""

    entity: str
    ref: str
    current_version: int
    reason: str
    purge_resources: bool = False


@dataclass(frozen=True)
class Origin:
    """Who caused a change, recorded on its event lines and on the compile requests it enqueues.

    ``actor`` is the authenticated caller (``local`` until tokens exist) or ``system`` for the
    steps the engine takes itself; ``request_id`` joins those rows to the API request (and the
    audit trail) that started the chain, so an auto transfer or a validation outcome carries
    the request id of the operator request that caused it.
    """

    actor: str
    request_id: str | None = None

    def follow_up(self) -> Origin:
        """The origin of a step the engine takes because of this one."""
        return Origin(SYSTEM_ACTOR, self.request_id)


SYSTEM_ACTOR = "system"
SYSTEM = Origin(SYSTEM_ACTOR)


Command = (
    Create
    | Update
    | Delete
    | SetState
    | Auto
    | ValidationOutcome
    | ResourceOutcome
    | ExportFailed
    | ForceState
    | ForceAttributes
    | ForceDestroy
)
