"""Deploy tables: where each resource's deploy stands, its requires edges, its action log.

Why these shapes (docs/architecture.md, deploy):

* ``lsm_resource_state``: one row per resource of an environment's newest desired-state
  version, keyed by resource id, **not** per version. A new version rewrites only the rows of
  the resources it changed (the deploy planner reads the ``ds_resource`` rows written since it
  last planned), so scheduling costs what changed, never the size of the environment. Per-id
  rows are also what must survive new versions: the retry counter and the ``limit``/``burst``
  token bucket (``bucket_tokens``, ``bucket_at``).
  ``desired_hash`` is the hash of the desired attributes and requires of ``version``;
  ``deployed_hash`` the hash that was last deployed with success: a resource whose desired
  hash equals its deployed hash needs nothing (unless it drifted: ``poll``, repair).
  A resource that left the desired state keeps its row until its handler deleted it from its
  target (``removal``: ``lsm.store.deploy.removals``).
* ``lsm_resource_require``: the requires edges of the current rows, keyed by the required id,
  so that "who requires X" (un-skip dependants when X recovers; delete purged resources after
  the ones that require them) is a keyed lookup.
* ``lsm_resource_action``: the action log, one row per deploy or dry run of one resource.
* ``lsm_deploy_head``: per environment, the newest desired-state version the planner has
  turned into resource-state rows.

SQLAlchemy Core tables (on ``SQLModel.metadata``): agents read and write them in batches and
never load ORM objects. Timestamps are timezone-aware UTC.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)
from sqlmodel import SQLModel

from lsm.schemas.deploy import OPEN_STATUSES, ResourceStatus
from lsm.store.database import JsonType

metadata = SQLModel.metadata

#: statuses an agent still has to act on, as the literal SQL of the partial index
#: ``ix_lsm_resource_state_open`` (the same text, so that a query's condition matches it)
OPEN_STATUSES_SQL = "status IN ({})".format(", ".join(f"'{s}'" for s in OPEN_STATUSES))
#: the condition of the partial index of claims (``ix_lsm_resource_state_claimed``)
CLAIMED_SQL = f"status = '{ResourceStatus.DEPLOYING}'"

lsm_resource_state = Table(
    "lsm_resource_state",
    metadata,
    Column("resource_id", String, nullable=False),
    Column("env_id", String(36), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("resource_type", String(255), nullable=False),
    # the resource set ('' = shared), as in ds_resource
    Column("set_name", String(255), nullable=False),
    Column("version", Integer, nullable=False),
    Column("desired_hash", String(64), nullable=False),
    Column("deployed_hash", String(64), nullable=True),
    Column("last_deployed_version", Integer, nullable=True),
    Column("status", String(20), nullable=False),
    Column("purged", Boolean, nullable=False),
    Column("requires", JsonType, nullable=False),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text, nullable=True),
    Column("last_action", String(20), nullable=True),
    Column("last_action_at", DateTime(timezone=True), nullable=True),
    # not before this time: a retry's delay, a token bucket's wait
    Column("next_attempt_at", DateTime(timezone=True), nullable=True),
    # a deployed resource with ``poll`` is re-checked at this time
    Column("poll_at", DateTime(timezone=True), nullable=True),
    Column("bucket_tokens", Float, nullable=True),
    Column("bucket_at", DateTime(timezone=True), nullable=True),
    # the agent process that runs it while ``deploying`` (fences a taken-over agent's results)
    Column("claimed_by", String(200), nullable=True),
    # when it was claimed: a claim older than the agents' lease is re-examined (migration 0015)
    Column("claimed_at", DateTime(timezone=True), nullable=True),
    # a resource that left the desired state and is still to be deleted from its target: its last
    # desired attributes (JSON text, ``purged`` set); NULL in the desired state (migration 0017)
    Column("removal", Text, nullable=True),
    PrimaryKeyConstraint("resource_id", "env_id", name="pk_lsm_resource_state"),
    # "the open work of these agents" (claims); partial: never a scan of the deployed rows
    Index(
        "ix_lsm_resource_state_open",
        "env_id",
        "agent",
        "status",
        sqlite_where=text(OPEN_STATUSES_SQL),
        postgresql_where=text(OPEN_STATUSES_SQL),
    ),
    # "the resources of an environment, by agent" (listing in id order, repair)
    Index("ix_lsm_resource_state_agent", "env_id", "agent", "resource_id"),
    # "the resources of an environment (with this status / of this type), in id order" (listing:
    # ``GET /api/v1/resources?status=failed`` pages without sorting the environment; the
    # primary key leads with the id, so without ``_env`` a page would sort the environment)
    Index("ix_lsm_resource_state_env", "env_id", "resource_id"),
    Index("ix_lsm_resource_state_status", "env_id", "status", "resource_id"),
    Index("ix_lsm_resource_state_type", "env_id", "resource_type", "resource_id"),
    # "claims older than the lease" (re-examined by each recovery pass); partial: only claimed rows
    Index(
        "ix_lsm_resource_state_claimed",
        "claimed_at",
        sqlite_where=text(CLAIMED_SQL),
        postgresql_where=text(CLAIMED_SQL),
    ),
    # "deployed resources whose poll is due"
    Index(
        "ix_lsm_resource_state_poll",
        "env_id",
        "poll_at",
        sqlite_where=text("poll_at IS NOT NULL"),
        postgresql_where=text("poll_at IS NOT NULL"),
    ),
)

lsm_resource_require = Table(
    "lsm_resource_require",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("required_id", String, nullable=False),
    Column("resource_id", String, nullable=False),
    # "who requires these ids"
    PrimaryKeyConstraint("required_id", "env_id", "resource_id", name="pk_lsm_resource_require"),
    # "the edges of these requirers" (replaced when a resource's requires change)
    Index("ix_lsm_resource_require_requirer", "resource_id", "env_id"),
)

lsm_resource_action = Table(
    "lsm_resource_action",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("env_id", String(36), nullable=False),
    Column("resource_id", String, nullable=False),
    Column("version", Integer, nullable=False),
    Column("action", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("changes", JsonType, nullable=False),
    Column("messages", JsonType, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("duration_ms", Float, nullable=False),
    Column("agent", String(255), nullable=False),
    Column("dry_run", Boolean, nullable=False, server_default=text("false")),
    # "the action log of a resource, newest first"
    Index("ix_lsm_resource_action_resource", "resource_id", "env_id", "id"),
    # "the lines of an environment after id N" (deploy outcomes on the event feed; migration 0009)
    Index("ix_lsm_resource_action_env", "env_id", "id"),
)

#: deploy results (or a plan) whose lifecycle feedback has not run yet: written in the transaction
#: of the results, deleted once the feedback ran; what a crash interrupted in between is finished
#: by the recovery pass of the next agent (``lsm.deploy.recovery``). It holds only unfinished
#: work, so reading it costs nothing like the inventory's size.
lsm_deploy_feedback = Table(
    "lsm_deploy_feedback",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("env_id", String(36), nullable=False),
    # the agent process that will run it (its presence lease says whether it still lives)
    Column("owner", String(200), nullable=False),
    Column("set_names", JsonType, nullable=False),
    # the resources whose outcome is new; NULL: every instance of the sets (a plan)
    Column("resource_ids", JsonType, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

lsm_deploy_head = Table(
    "lsm_deploy_head",
    metadata,
    Column("env_id", String(36), primary_key=True),
    Column("planned_version", Integer, nullable=False),
)


def resource_type_of(resource_id: str) -> str:
    """``"net::Host[a1,name=h1]"`` -> ``"net::Host"``: the type a resource id names (the deploy
    tables key by id; metrics, listings and handlers group by type)."""
    return resource_id.split("[", 1)[0]


__all__ = [
    "CLAIMED_SQL",
    "OPEN_STATUSES_SQL",
    "lsm_deploy_feedback",
    "lsm_deploy_head",
    "lsm_resource_action",
    "lsm_resource_require",
    "lsm_resource_state",
    "resource_type_of",
]
