"""Orders: many changes across entities applied in one transaction, kept to be asked about.

Revision ID: 0020
Revises: 0019

See ``lsm.store.orders``: the row holds the order's items (in the order given, each with its
instance and target state); its status is read from those instances when asked.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_order",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=True),
        sa.Column("items", JsonType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_lsm_order"),
    )
    op.create_index("ix_lsm_order_env_created", "lsm_order", ["env_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_lsm_order_env_created", table_name="lsm_order")
    op.drop_table("lsm_order")
