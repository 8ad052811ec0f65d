"""Halt and resume: halted environments and paused agent names.

Revision ID: 0011
Revises: 0010

See ``lsm.store.environments.halts``. Both tables start empty: nothing is halted or paused after the
upgrade.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_halt",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("halted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("halted_by", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("env_id"),
    )
    op.create_table(
        "lsm_agent_pause",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("paused_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("paused_by", sa.String(200), nullable=True),
        sa.Column("stay_paused", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "agent", name="pk_lsm_agent_pause"),
    )


def downgrade() -> None:
    op.drop_table("lsm_agent_pause")
    op.drop_table("lsm_halt")
