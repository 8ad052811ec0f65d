"""Discovery tables: what discovery resources found on their targets, and what was adopted.

Why these shapes (docs/semantics.md §6):

* ``lsm_discovered_resource``: one row per discovered resource id of an environment. Each run
  of a discovery resource replaces the rows it found before (``discovered_by``): the ones it
  no longer finds are deleted, the others updated in place (``first_seen`` kept, ``last_seen``
  moved). An id found by two discovery resources belongs to the one that reported it last.
  ``managed`` is not stored: it is whether the id has a current row in ``ds_resource`` (the
  newest desired-state version), asked per row with a keyed lookup when it is read, so it is
  never stale and no export has to touch this table.
* ``lsm_discovered_adoption``: one row per adopted id, written in the transaction that creates
  the instance (``lsm.orchestration``). It is a table of its own so that a later run that
  does not see the resource (or sees it again) never forgets that it was adopted.

Results are never part of the model or of the desired state. SQLAlchemy Core tables on
``SQLModel.metadata``; timestamps are timezone-aware UTC.
"""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Index, PrimaryKeyConstraint, String, Table
from sqlmodel import SQLModel

from lsm.store.database import JsonType

metadata = SQLModel.metadata

lsm_discovered_resource = Table(
    "lsm_discovered_resource",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("resource_id", String, nullable=False),
    Column("resource_type", String(255), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("attributes", JsonType, nullable=False),
    # the discovery resource whose run reported it, and the agent that ran it
    Column("discovered_by", String, nullable=False),
    Column("discovery_agent", String(255), nullable=False),
    Column("first_seen", DateTime(timezone=True), nullable=False),
    Column("last_seen", DateTime(timezone=True), nullable=False),
    # "one id" and "an environment's rows by id" (listing, paging in id order)
    PrimaryKeyConstraint("env_id", "resource_id", name="pk_lsm_discovered_resource"),
    # "what this discovery resource found before" (a run's replacement)
    Index("ix_lsm_discovered_resource_by", "discovered_by", "env_id"),
    # the type and agent filters, in id order
    Index("ix_lsm_discovered_resource_type", "env_id", "resource_type", "resource_id"),
    Index("ix_lsm_discovered_resource_agent", "env_id", "agent", "resource_id"),
)

lsm_discovered_adoption = Table(
    "lsm_discovered_adoption",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("resource_id", String, nullable=False),
    Column("instance_id", String(36), nullable=False),
    Column("entity", String(255), nullable=False),
    Column("adopted_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("env_id", "resource_id", name="pk_lsm_discovered_adoption"),
)

__all__ = ["lsm_discovered_adoption", "lsm_discovered_resource"]
