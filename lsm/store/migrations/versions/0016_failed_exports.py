"""The failed-export counter of ``/metrics``: exporting compiles that failed, per error kind.

Revision ID: 0016
Revises: 0015

See ``lsm.store.metric_counters`` (``count_failed_export``). Like the other counters it
starts at zero: the compile history is not replayed into it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_metric_failed_export",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("error", sa.String(100), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "error", name="pk_lsm_metric_failed_export"),
    )


def downgrade() -> None:
    op.drop_table("lsm_metric_failed_export")
