"""Discovery: the discovered-resources inventory and the adoption records.

Revision ID: 0006
Revises: 0005

See ``lsm.store.discovery.tables`` for why each table has its shape. Self-contained (it
depends on no table of another revision), so the chain can be renumbered when branches merge.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_discovered_resource",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("resource_type", sa.String(255), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("attributes", JsonType, nullable=False),
        sa.Column("discovered_by", sa.String(), nullable=False),
        sa.Column("discovery_agent", sa.String(255), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "resource_id", name="pk_lsm_discovered_resource"),
    )
    op.create_index("ix_lsm_discovered_resource_by", "lsm_discovered_resource", ["discovered_by", "env_id"])
    op.create_index(
        "ix_lsm_discovered_resource_type",
        "lsm_discovered_resource",
        ["env_id", "resource_type", "resource_id"],
    )
    op.create_index(
        "ix_lsm_discovered_resource_agent", "lsm_discovered_resource", ["env_id", "agent", "resource_id"]
    )
    op.create_table(
        "lsm_discovered_adoption",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("instance_id", sa.String(36), nullable=False),
        sa.Column("entity", sa.String(255), nullable=False),
        sa.Column("adopted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "resource_id", name="pk_lsm_discovered_adoption"),
    )


def downgrade() -> None:
    op.drop_table("lsm_discovered_adoption")
    op.drop_index("ix_lsm_discovered_resource_agent", table_name="lsm_discovered_resource")
    op.drop_index("ix_lsm_discovered_resource_type", table_name="lsm_discovered_resource")
    op.drop_index("ix_lsm_discovered_resource_by", table_name="lsm_discovered_resource")
    op.drop_table("lsm_discovered_resource")
