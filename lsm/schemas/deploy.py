"""Deploy state and actions: the bodies of ``/api/v1/resources`` and ``/api/v1/deploy``.

docs/api.md (deploy). The server builds them from the deploy tables (``lsm.store.deploy.tables``);
the client parses answers into them without importing anything of the server.

A resource's ``status`` (``ResourceStatus``) is where its deploy stands for the desired attributes
of the newest version that holds it:

* ``pending``: it must be acted on (new or changed desired attributes, drift to repair, a retry
  waiting for its delay: ``attempts`` > 0 and ``next_attempt_at`` set);
* ``deploying``: an agent runs its handler now;
* ``deployed``: the target matched (or was made to match) these desired attributes;
* ``failed``: its tries are spent (``retry``); resources that require it are ``skipped`` until it
  succeeds (a new version, ``POST /api/v1/deploy``, a repair run);
* ``skipped``: a resource it requires failed (or was skipped); retried when that one recovers;
* ``noop_pending``: noop (per resource or global) found changes it did not apply.

``deployed``, ``failed`` and ``skipped`` are *final*: an instance's resource-based transfer
fires when every resource of its desired-state version is final (all ``deployed``: success).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ResourceStatus(StrEnum):
    PENDING = "pending"
    DEPLOYING = "deploying"
    DEPLOYED = "deployed"
    FAILED = "failed"
    SKIPPED = "skipped"
    NOOP_PENDING = "noop_pending"

    @property
    def final(self) -> bool:
        return self in FINAL_STATUSES


#: the statuses an instance's resource-based transfer waits for (module docstring)
FINAL_STATUSES = (ResourceStatus.DEPLOYED, ResourceStatus.FAILED, ResourceStatus.SKIPPED)
#: the statuses an agent still has to act on; a resource that requires one of them waits
OPEN_STATUSES = (ResourceStatus.PENDING, ResourceStatus.DEPLOYING)
#: the statuses of a required resource that skip the resources requiring it
BLOCKING_STATUSES = (ResourceStatus.FAILED, ResourceStatus.SKIPPED)


class ActionKind(StrEnum):
    """What one deploy of one resource did (a line of its action log)."""

    READ = "read"  # dry run, or noop without changes: only the read side ran
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    NONE = "none"  # read, and the target was in the desired state already
    NOOP = "noop"  # changes found and not applied (noop)
    SKIP = "skip"  # not run: a required resource failed or was skipped
    ERROR = "error"  # the handler (or finding it) failed
    DISCOVER = "discover"
    ORPHAN = "orphan"  # left the desired state and forgotten, left on its target (deletion policy)


class ChangeOut(BaseModel):
    """One attribute that differs: its value on the target and the desired one."""

    current: Any = None
    desired: Any = None


class ResourceOut(BaseModel):
    """A resource of the newest desired-state version and where its deploy stands."""

    id: str
    type: str
    agent: str
    set: str | None = Field(None, description="The resource set (the tree's root id); null: shared.")
    set_name: str | None = Field(
        None, description="The set's name for a person: its root's entity and identity (router 10.0.0.1)."
    )
    status: ResourceStatus
    version: int = Field(description="The newest desired-state version that changed its desired attributes.")
    last_deployed_version: int | None = None
    attempts: int = Field(0, description="Failed tries since its last success.")
    last_error: str | None = None
    last_action: ActionKind | None = None
    last_action_at: datetime | None = None
    next_attempt_at: datetime | None = None
    purged: bool = False
    removal: bool = Field(
        False,
        description="It left the desired state: its deploy deletes it from its target (its last "
        "desired attributes, purged).",
    )
    requires: list[str] = []
    attributes: dict[str, Any] | None = None
    #: the ones of ``requires`` that the engine added (``autoedge``; given with ``attributes``)
    auto_requires: list[str] = []


class LogLineOut(BaseModel):
    level: str
    message: str
    at: datetime
    data: dict[str, Any] = {}


class ResourceActionOut(BaseModel):
    """One line of a resource's action log: one deploy (or dry run) of it."""

    id: int
    resource_id: str
    version: int
    action: ActionKind
    status: ResourceStatus
    changes: dict[str, ChangeOut] = {}
    messages: list[LogLineOut] = []
    started_at: datetime
    duration_ms: float
    agent: str
    dry_run: bool = False


#: the name a selection gives the shared set (the resources no instance owns); set names are
#: root instance ids (UUIDs), so it never names a tree's set
SHARED_SET = "shared"


class ResourceSelection(BaseModel):
    """Which resources of the newest version a deploy, dry run or compliance report covers.

    Each field narrows the selection (a resource must match every field given); within a field
    the values are alternatives. Nothing given: the whole environment. ``sets`` are resource set
    names (the root instance id of a tree, or ``shared``); ``instances`` are instance ids, and
    select the resources those instances' implementations produced.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    agents: list[str] | None = Field(None, description="Only these agents' resources (default: every agent).")
    types: list[str] | None = Field(None, description="Only resources of these types (e.g. std::File).")
    sets: list[str] | None = Field(
        None, description="Only resources of these resource sets (a tree's root instance id, or 'shared')."
    )
    instances: list[str] | None = Field(
        None, description="Only the resources these instances (ids) produced in the desired state."
    )

    def selection(self) -> ResourceSelection:
        """Just the selection (a request's other fields left out)."""
        return ResourceSelection(
            agents=self.agents, types=self.types, sets=self.sets, instances=self.instances
        )

    @property
    def everything(self) -> bool:
        return self.agents is None and self.types is None and self.sets is None and self.instances is None


class DeployRequest(ResourceSelection):
    model_config = ConfigDict(extra="forbid", strict=True)

    dry_run: bool = Field(False, description="Only read: report the changes a deploy would make.")
    repair: bool = Field(
        False, description="Re-read every resource and fix drift, not only failed and skipped ones."
    )


class DryRunItem(BaseModel):
    """What a deploy of one resource would do, found by its handler's read side only."""

    id: str
    action: ActionKind
    changes: dict[str, ChangeOut] = {}
    error: str | None = None


class DeployResult(BaseModel):
    """The answer to ``POST /api/v1/deploy``: what was scheduled, or the dry run's findings."""

    version: int | None = Field(None, description="The desired-state version deployed (null: none yet).")
    dry_run: bool = False
    scheduled: int = Field(0, description="Resources set to pending by this request.")
    resources: list[DryRunItem] = []


class DeploymentProgress(BaseModel):
    """An instance's resources in its desired-state version, counted by where their deploy stands."""

    total: int = 0
    deployed: int = 0
    failed: int = 0
    skipped: int = 0
    waiting: int = 0


class DeployStatusOut(BaseModel):
    """``GET /api/v1/deploy``: where the deploy of the environment stands, counted by status.

    What ``lsm deploy --wait`` polls: one grouped count, whatever the size of the environment.
    """

    version: int | None = Field(None, description="The newest desired-state version (null: none yet).")
    planned_version: int | None = Field(
        None, description="The newest version the deploy engine has planned (null: none yet)."
    )
    total: int = 0
    counts: dict[ResourceStatus, int] = Field(
        default_factory=dict, description="Resources per status (statuses with none left out)."
    )
