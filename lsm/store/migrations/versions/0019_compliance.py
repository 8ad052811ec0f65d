"""Compliance reports: the report, its parts per agent (claimed by agent processes), its rows,
and the counter of checked resources (``lsm_compliance_checks_total``).

Revision ID: 0019
Revises: 0017

See ``lsm.store.compliance``. A new feature: nothing to carry over from older databases.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0019"
down_revision = "0017"
branch_labels = None
depends_on = None

_OPEN_PART = sa.text("status IN ('queued', 'running')")


def upgrade() -> None:
    op.create_table(
        "lsm_compliance_report",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("selection", JsonType, nullable=False),
        sa.Column("version", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("ix_lsm_compliance_report_env", "lsm_compliance_report", ["env_id", "created_at"])
    op.create_table(
        "lsm_compliance_part",
        sa.Column("report_id", sa.String(36), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(200), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("report_id", "agent", name="pk_lsm_compliance_part"),
    )
    op.create_index(
        "ix_lsm_compliance_part_open",
        "lsm_compliance_part",
        ["status"],
        sqlite_where=_OPEN_PART,
        postgresql_where=_OPEN_PART,
    )
    op.create_table(
        "lsm_compliance_item",
        sa.Column("report_id", sa.String(36), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(255), nullable=False),
        sa.Column("set_name", sa.String(255), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("changes", JsonType, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("report_id", "resource_id", name="pk_lsm_compliance_item"),
    )
    op.create_index(
        "ix_lsm_compliance_item_outcome", "lsm_compliance_item", ["report_id", "outcome", "resource_id"]
    )
    op.create_index("ix_lsm_compliance_item_agent", "lsm_compliance_item", ["report_id", "agent"])
    op.create_table(
        "lsm_metric_compliance",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(255), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "env_id", "agent", "resource_type", "outcome", name="pk_lsm_metric_compliance"
        ),
    )


def downgrade() -> None:
    op.drop_table("lsm_metric_compliance")
    op.drop_table("lsm_compliance_item")
    op.drop_table("lsm_compliance_part")
    op.drop_table("lsm_compliance_report")
