"""Counters for ``/metrics``: compiles per kind and outcome, time per compile stage, deploy actions.

Revision ID: 0010
Revises: 0009

See ``lsm.store.metric_counters``. The counters start at zero with this release: the
compile history and the action log are not replayed into them (on a large database that would
be a long scan inside the upgrade, and ``rate()`` only needs them to grow from here).

Also the partial index ``ix_lsm_webhook_delivery_failed`` (deliveries that gave up, per
environment), so that the failure gauge does not read every delivered row.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_metric_compile",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "kind", "status", name="pk_lsm_metric_compile"),
    )
    op.create_table(
        "lsm_metric_compile_stage",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("stage", sa.String(100), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "kind", "stage", name="pk_lsm_metric_compile_stage"),
    )
    op.create_table(
        "lsm_metric_deploy_action",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(255), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "env_id", "agent", "resource_type", "action", name="pk_lsm_metric_deploy_action"
        ),
    )
    op.create_index(
        "ix_lsm_webhook_delivery_failed",
        "lsm_webhook_delivery",
        ["env_id"],
        sqlite_where=sa.text("status = 'failed'"),
        postgresql_where=sa.text("status = 'failed'"),
    )


def downgrade() -> None:
    op.drop_index("ix_lsm_webhook_delivery_failed", table_name="lsm_webhook_delivery")
    op.drop_table("lsm_metric_deploy_action")
    op.drop_table("lsm_metric_compile_stage")
    op.drop_table("lsm_metric_compile")
