"""SQLModel tables of the service inventory: environments, entities, instances, events, compiles.

Why one module: these tables are read together by every layer above (orchestration, selection,
compiler, API) and their indexes are designed together. Each index names the query it serves.
Ids are UUID strings so that SQLite and PostgreSQL store them alike.

Desired-state tables live in ``lsm.store.desired_state.tables``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Column, Index, text
from sqlmodel import Field, SQLModel

from lsm.store.database import JsonType
from lsm.store.instances import changes as instance_changes


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


class EnvironmentRow(SQLModel, table=True):
    """A tenant: its own model, settings and inventory."""

    __tablename__ = "lsm_environment"
    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    name: str = Field(unique=True, index=True, max_length=200)
    model: str | None = Field(default=None)
    settings: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class EntityRow(SQLModel, table=True):
    """A service entity as registered by the environment's model (the catalog, persisted)."""

    __tablename__ = "lsm_entity"
    env_id: str = Field(primary_key=True, max_length=36, foreign_key="lsm_environment.id")
    name: str = Field(primary_key=True, max_length=200)
    lifecycle: str = Field(max_length=200)
    json_schema: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    updated_at: datetime = Field(default_factory=utcnow)


class InstanceRow(SQLModel, table=True):
    """A service instance: its state, three attribute sets and versions.

    ``owner_id`` caches the value of the binding's ``relation_to_owner`` (an ``rw`` attribute,
    so it never changes) so that owner trees are walked through an index, never by scanning
    JSON. ``identity`` caches the identity attribute as text, unique among live instances.
    """

    __tablename__ = "lsm_instance"
    __table_args__ = (
        # identity uniqueness per entity and environment among non-deleted instances
        Index(
            "ux_lsm_instance_identity",
            "env_id",
            "entity",
            "identity",
            unique=True,
            sqlite_where=text("deleted = 0 AND identity IS NOT NULL"),
            postgresql_where=text("deleted = false AND identity IS NOT NULL"),
        ),
        # listing per entity, filtered by state
        Index("ix_lsm_instance_entity_state", "env_id", "entity", "state"),
        # owner tree walk down
        Index("ix_lsm_instance_owner", "env_id", "owner_id"),
    )
    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    env_id: str = Field(max_length=36, foreign_key="lsm_environment.id")
    entity: str = Field(max_length=200)
    state: str = Field(max_length=200)
    version: int = 1
    desired_state_version: int = 0
    candidate_attributes: dict[str, Any] | None = Field(default=None, sa_column=Column(JsonType))
    active_attributes: dict[str, Any] | None = Field(default=None, sa_column=Column(JsonType))
    rollback_attributes: dict[str, Any] | None = Field(default=None, sa_column=Column(JsonType))
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    identity: str | None = Field(default=None, max_length=500)
    owner_id: str | None = Field(default=None, max_length=36)
    deleted: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    last_updated: datetime = Field(default_factory=utcnow)


class InstanceRefRow(SQLModel, table=True):
    """An inter-service relation ``source.attribute -> target``, in any of the three sets.

    Kept in step with the attribute sets by the orchestration so that selectors can follow
    relations both ways through an index (the relation-closure selector).
    """

    __tablename__ = "lsm_instance_ref"
    __table_args__ = (Index("ix_lsm_instance_ref_target", "env_id", "target_id"),)
    env_id: str = Field(primary_key=True, max_length=36)
    source_id: str = Field(primary_key=True, max_length=36)
    attribute: str = Field(primary_key=True, max_length=200)
    target_id: str = Field(primary_key=True, max_length=36)


class EventRow(SQLModel, table=True):
    """One line of an instance's event log: every executed transfer and every refusal."""

    __tablename__ = "lsm_event"
    __table_args__ = (Index("ix_lsm_event_instance", "instance_id", "id"),)
    id: int | None = Field(default=None, primary_key=True)
    env_id: str = Field(max_length=36)
    instance_id: str = Field(max_length=36)
    version: int
    source: str | None = Field(default=None, max_length=200)
    target: str = Field(max_length=200)
    trigger: str = Field(max_length=50)
    message: str = ""
    compile_id: str | None = Field(default=None, max_length=36)
    is_error: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    #: who asked for the change (a token's actor; ``system`` for the engine's own steps)
    actor: str | None = Field(default=None, max_length=200)
    #: the API request that caused it (``X-Request-ID``), to join event lines to an audit trail
    request_id: str | None = Field(default=None, max_length=100)


class CompileRow(SQLModel, table=True):
    """A compile request and, once run, its report. Committed with the change that caused it.

    ``status`` is a ``CompileStatus``, ``kind`` a ``CompileKind``. ``merged_into`` points to the
    compile that actually ran this request when it was batched with others. ``params`` holds
    what the request needs to run (a validation's expected instance version, trigger and
    target); ``report`` only what the run found.

    Leases: a worker that claims a request writes ``lease_owner`` and ``lease_expires`` and
    renews the expiry while it runs (heartbeat). A ``running`` request whose lease expired
    belongs to a worker that died: the next claim takes it over and counts ``attempts``, so a
    request that kills every worker that runs it is failed instead of retried for ever.
    """

    __tablename__ = "lsm_compile"
    __table_args__ = (
        Index("ix_lsm_compile_queue", "env_id", "status", "created_at"),
        # which environments have work, and expired leases: never a scan of the history
        Index(
            "ix_lsm_compile_active",
            "status",
            "env_id",
            "kind",
            sqlite_where=text("status IN ('queued', 'running')"),
            postgresql_where=text("status IN ('queued', 'running')"),
        ),
    )
    id: str = Field(default_factory=new_id, primary_key=True, max_length=36)
    env_id: str = Field(max_length=36)
    kind: str = Field(max_length=20)
    status: str = Field(default="queued", max_length=20)
    requested_ids: list[str] = Field(default_factory=list, sa_column=Column(JsonType, nullable=False))
    service_entities: list[str] = Field(default_factory=list, sa_column=Column(JsonType, nullable=False))
    exclude: list[str] = Field(default_factory=list, sa_column=Column(JsonType, nullable=False))
    instance_id: str | None = Field(default=None, max_length=36)
    reason: str = ""
    merged_into: str | None = Field(default=None, max_length=36)
    desired_state_version: int | None = None
    params: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    lease_owner: str | None = Field(default=None, max_length=200)
    lease_expires: datetime | None = None
    attempts: int = 0
    actor: str | None = Field(default=None, max_length=200)
    request_id: str | None = Field(default=None, max_length=100)


class InstanceResourcesRow(SQLModel, table=True):
    """Which resources an instance's implementations produced in the latest desired state.

    Written by the compiler in the same transaction as the export, replaced per ownership tree
    (``set_name``) so that a partial compile touches only the trees it compiled.

    ``instance_version`` / ``instance_state`` are the instance's ``version`` and ``state`` when
    it was compiled: an incremental full compile refines only the trees of instances whose live
    row differs (``lsm.compiler.incremental``). ``None`` (rows written before 0003) means
    "unknown": such an instance counts as changed.
    """

    __tablename__ = "lsm_instance_resources"
    __table_args__ = (
        Index("ix_lsm_instance_resources_set", "env_id", "set_name"),
        # "the records written since desired-state version p" (the deploy planner, 0005)
        Index("ix_lsm_instance_resources_version", "env_id", "desired_state_version"),
    )
    env_id: str = Field(primary_key=True, max_length=36)
    instance_id: str = Field(primary_key=True, max_length=36)
    set_name: str = Field(max_length=36)
    desired_state_version: int
    resource_ids: list[str] = Field(default_factory=list, sa_column=Column(JsonType, nullable=False))
    instance_version: int | None = Field(default=None)
    instance_state: str | None = Field(default=None, max_length=200)
    #: the instance's ``desired_state_version`` at that compile (0005): the deploy engine fires
    #: an instance's resource-based transfer only when this equals the instance's own
    instance_desired_state_version: int | None = Field(default=None)


class InstanceChangeRow(SQLModel, table=True):
    """An instance that changed since a full compile last looked at it (a change marker).

    Written only by the database trigger on ``lsm_instance`` (``lsm.store.instances.changes``),
    removed by full compiles; ``version`` is the instance's version at its last change.
    """

    __tablename__ = "lsm_instance_change"
    env_id: str = Field(primary_key=True, max_length=36)
    instance_id: str = Field(primary_key=True, max_length=36)
    version: int


class TreeSharedRow(SQLModel, table=True):
    """A shared resource that an ownership tree produced when it was last compiled, with its hash.

    Why: an incremental full compile skips unchanged trees but must still garbage-collect the
    shared resources that no tree produces any more, and must fail where refining everything
    would (two trees producing one shared resource with different content). These rows answer
    both without refining: "does any tree still produce X" and "does another tree produce X
    with another content", each through ``ix_lsm_tree_shared_resource``. Replaced per tree
    (``set_name``, the tree's root id) in the export's transaction, like ``InstanceResourcesRow``.
    """

    __tablename__ = "lsm_tree_shared"
    __table_args__ = (
        # "does any tree produce X (with a content other than h)": the key first (see
        # lsm.store.desired_state.tables for why keyed indexes do not lead with env_id)
        Index("ix_lsm_tree_shared_resource", "resource_id", "env_id", "content_hash"),
    )
    set_name: str = Field(primary_key=True, max_length=255)
    env_id: str = Field(primary_key=True, max_length=36)
    resource_id: str = Field(primary_key=True)
    content_hash: str = Field(max_length=64)


class LeaseRow(SQLModel, table=True):
    """A named lease: at most one live holder at a time, taken over once it expires.

    Names: ``scheduler`` (the cron), ``sqlite-worker`` (the one worker process SQLite allows),
    and later one per deploy agent name. The holder renews ``expires_at`` (heartbeat); a holder
    that dies stops renewing and another process takes the name over after expiry.
    """

    __tablename__ = "lsm_lease"
    name: str = Field(primary_key=True, max_length=200)
    owner: str = Field(max_length=200)
    acquired_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    info: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))


class ScheduleRow(SQLModel, table=True):
    """When a periodic job of an environment last fired (``auto_full_compile``, later repair).

    Stored so that a scheduler that takes over from a dead one neither repeats nor skips ticks.
    """

    __tablename__ = "lsm_schedule"
    env_id: str = Field(primary_key=True, max_length=36)
    job: str = Field(primary_key=True, max_length=50)
    last_tick: datetime | None = None


instance_changes.install(SQLModel.metadata)
