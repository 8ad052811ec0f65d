"""Service instances and their event log: the bodies of ``/lsm/v1/service_inventory``.

docs/api.md §4 (the instance body). The server builds them from rows (``lsm.facade.views``); the client
may parse answers into them without importing anything of the server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lsm.schemas.compile_reports import CompileOut
from lsm.schemas.deploy import DeploymentProgress
from lsm.schemas.limits import MAX_ID_LENGTH, MAX_INT, MAX_NAME_LENGTH


class InstanceOut(BaseModel):
    """One service instance: its state, versions and the three attribute sets."""

    id: str
    service_entity: str
    version: int
    desired_state_version: int
    state: str
    candidate_attributes: dict[str, Any] | None
    active_attributes: dict[str, Any] | None
    rollback_attributes: dict[str, Any] | None
    deleted: bool
    created_at: datetime
    last_updated: datetime
    owner: str | None
    config: dict[str, Any] = {}
    deployment_progress: DeploymentProgress | None = Field(
        None,
        description="Its resources counted by deploy status; only on the one-instance route "
        "(null in lists and change answers).",
    )


class EventOut(BaseModel):
    """One line of an instance's event log: a transfer done, or refused (``is_error``)."""

    id: int
    instance_id: str
    version: int
    source: str | None
    target: str
    trigger: str
    message: str
    compile_id: str | None
    is_error: bool
    created_at: datetime
    #: who caused it: the API caller, or ``system`` for the engine's own steps
    actor: str | None = None
    #: the API request (``X-Request-ID``) that caused it, directly or through engine steps
    request_id: str | None = None


class _Body(BaseModel):
    """A request body: unknown fields refused, and no coercion (``"wait": 0`` is not a boolean)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class CreateInstance(_Body):
    attributes: dict[str, Any] = Field(description="The instance's attributes (the candidate set).")
    service_instance_id: str | None = Field(
        None, max_length=MAX_ID_LENGTH, description="A chosen instance id (a UUID); generated if absent."
    )
    initial_state: str | None = Field(
        None, max_length=MAX_NAME_LENGTH, description="One of the lifecycle's alternative initial states."
    )


class UpdateInstance(_Body):
    current_version: int = Field(
        ge=0, le=MAX_INT, description="The version the update is based on; 409 if it is not current."
    )
    attributes: dict[str, Any] = Field(description="Merged, top level, into the candidate set.")


class SetStateRequest(_Body):
    current_version: int = Field(ge=0, le=MAX_INT)
    target_state: str = Field(max_length=MAX_NAME_LENGTH)
    message: str | None = None


class InstanceResourceOut(BaseModel):
    """A resource an instance produced in the latest desired state; ``status`` is its deploy state."""

    id: str
    set: str | None
    #: the set's name for a person: its root's entity and identity (``router 10.0.0.1``)
    set_name: str | None = None
    desired_state_version: int
    status: str | None = Field(None, description="Its deploy status; null until the engine planned it.")
    last_error: str | None = None
    attempts: int = 0
    blocked_by: list[str] = Field(
        default_factory=list, description="A skipped resource: the failed or skipped resources it requires."
    )


class AllowedTransfer(BaseModel):
    trigger: str
    target: str


CauseKind = Literal[
    "pending_compile",
    "failed_validation",
    "failed_export",
    "failed_resource",
    "skipped_dependency",
    "stale_lock",
    "deploying",
    "halted",
    "agent_paused",
    "in_transition",
    "none",
]


class CauseSubject(BaseModel):
    """What a cause is about: an instance, a resource, a compile, a lock (lease), a validation, an
    environment (its halt) or an agent name (its pause)."""

    type: Literal["instance", "resource", "compile", "lock", "validation", "environment", "agent"]
    id: str


class Cause(BaseModel):
    """One link of a diagnosis chain: the previous link holds because of this one."""

    kind: CauseKind
    message: str = Field(description="One line for a person, without the 'because'.")
    subject: CauseSubject
    at: datetime | None = Field(
        None, description="When it happened, or when it will change (a retry, a lease takeover)."
    )
    details: dict[str, Any] = {}


class DiagnosisOut(BaseModel):
    """Why an instance is where it is: the causal chain and its summary, what it may do, its last
    error, its compiles, its failed resources."""

    cause: list[Cause] = Field(
        default_factory=list,
        description="From the instance's symptom down to the root cause (docs/semantics.md §7).",
    )
    summary: str = Field("", description="The chain as one line: 'X is in S because A because B'.")

    instance: InstanceOut
    state: str
    allowed: list[AllowedTransfer]
    last_error: EventOut | None
    validation_compile: CompileOut | None
    pending_compile: CompileOut | None
    resources: list[InstanceResourceOut]
    deployment_progress: DeploymentProgress = Field(default_factory=DeploymentProgress)
