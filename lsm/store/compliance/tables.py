"""Compliance report tables: the report an operator asked for, its parts per agent, its rows.

Why these shapes (docs/architecture.md, compliance reports):

* ``lsm_compliance_report``: one row per ``POST /api/v1/compliance``: the selection, the
  planned version it was taken at, where it stands, and why it failed if it could not run.
* ``lsm_compliance_part``: the report's work, one row per agent name with selected resources,
  claimed by an agent process like a deploy claim (``owner``, ``claimed_at``): a part whose
  owner died (its presence lease expired) is claimed again by another process, which first
  drops what the dead one wrote. Parts with work left are found through a partial index.
* ``lsm_compliance_item``: one row per checked resource: its outcome and the differences.
  Counts are one grouped read of the report's rows (``ix_lsm_compliance_item_outcome``).
"""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)
from sqlmodel import SQLModel

from lsm.store.database import JsonType

metadata = SQLModel.metadata

#: the statuses of parts with work left, and the condition of their partial index
#: (``ix_lsm_compliance_part_open``)
OPEN_STATUSES = ("queued", "running")
OPEN_PART_SQL = f"status IN {OPEN_STATUSES!r}"

lsm_compliance_report = Table(
    "lsm_compliance_report",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("env_id", String(36), nullable=False),
    Column("selection", JsonType, nullable=False),
    Column("version", Integer, nullable=True),
    Column("status", String(20), nullable=False),
    Column("total", Integer, nullable=False),
    Column("error", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    # "the reports of an environment, newest first" (the console's list)
    Index("ix_lsm_compliance_report_env", "env_id", "created_at"),
)

lsm_compliance_part = Table(
    "lsm_compliance_part",
    metadata,
    Column("report_id", String(36), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("env_id", String(36), nullable=False),
    Column("status", String(20), nullable=False),
    Column("total", Integer, nullable=False),
    # the agent process that runs it while ``running`` (its presence lease says whether it lives)
    Column("owner", String(200), nullable=True),
    Column("claimed_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("report_id", "agent", name="pk_lsm_compliance_part"),
    # "parts with work left": what a claim looks at; partial, so finished reports cost nothing
    Index(
        "ix_lsm_compliance_part_open",
        "status",
        sqlite_where=text(OPEN_PART_SQL),
        postgresql_where=text(OPEN_PART_SQL),
    ),
)

lsm_compliance_item = Table(
    "lsm_compliance_item",
    metadata,
    Column("report_id", String(36), nullable=False),
    Column("resource_id", String, nullable=False),
    Column("agent", String(255), nullable=False),
    Column("resource_type", String(255), nullable=False),
    # the resource set ('' = shared), as in lsm_resource_state
    Column("set_name", String(255), nullable=False),
    Column("outcome", String(20), nullable=False),
    Column("changes", JsonType, nullable=False),
    Column("error", Text, nullable=True),
    PrimaryKeyConstraint("report_id", "resource_id", name="pk_lsm_compliance_item"),
    # "the rows of a report with this outcome, in id order" (counts, filtered pages)
    Index("ix_lsm_compliance_item_outcome", "report_id", "outcome", "resource_id"),
    # "a part's rows" (dropped when a dead owner's part is claimed again)
    Index("ix_lsm_compliance_item_agent", "report_id", "agent"),
)

#: resources checked by compliance reports per environment, agent, type and outcome
#: (``lsm_compliance_checks_total``): bumped in the transaction that writes the rows, like the
#: deploy's action counters (``lsm.store.metric_counters``), so a scrape reads a few rows
lsm_metric_compliance = Table(
    "lsm_metric_compliance",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("resource_type", String(255), nullable=False),
    Column("outcome", String(20), nullable=False),
    Column("count", Integer, nullable=False),
    PrimaryKeyConstraint("env_id", "agent", "resource_type", "outcome", name="pk_lsm_metric_compliance"),
)

__all__ = [
    "OPEN_PART_SQL",
    "OPEN_STATUSES",
    "lsm_compliance_item",
    "lsm_compliance_part",
    "lsm_compliance_report",
    "lsm_metric_compliance",
]
