"""Idempotency keys of creates: the first answer to a create, per environment, kept for a day.

Revision ID: 0008
Revises: 0007

See ``lsm.store.idempotency``. Nothing to backfill: keys start being remembered with this
release.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_idempotency_key",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("key", sa.String(200), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("instance_id", sa.String(36), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("body", JsonType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "key"),
    )
    op.create_index("ix_lsm_idempotency_key_created", "lsm_idempotency_key", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_lsm_idempotency_key_created", table_name="lsm_idempotency_key")
    op.drop_table("lsm_idempotency_key")
