"""Webhooks: receivers per environment, their deliveries and attempts; deploy outcomes by cursor.

Revision ID: 0009
Revises: 0008

See ``lsm.store.webhooks.tables``. ``ix_lsm_resource_action_env`` makes "the action-log
lines of an environment after id N" (deploy outcomes on ``/api/v1/events`` and for webhooks) a
range read. Nothing to backfill: webhooks start empty.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_index("ix_lsm_resource_action_env", "lsm_resource_action", ["env_id", "id"])
    op.create_table(
        "lsm_webhook",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("events", JsonType, nullable=False),
        sa.Column("secret", sa.String(200), nullable=False),
        sa.Column("cursor", sa.String(400), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
    )
    op.create_index("ix_lsm_webhook_env", "lsm_webhook", ["env_id", "active"])
    op.create_table(
        "lsm_webhook_delivery",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("webhook_id", sa.String(36), nullable=False),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("event_kind", sa.String(50), nullable=False),
        sa.Column("event_key", sa.String(300), nullable=False),
        sa.Column("payload", JsonType, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("webhook_id", "event_key", name="uq_lsm_webhook_delivery_event"),
    )
    op.create_index(
        "ix_lsm_webhook_delivery_hook", "lsm_webhook_delivery", ["webhook_id", "created_at", "id"]
    )
    op.create_index(
        "ix_lsm_webhook_delivery_due",
        "lsm_webhook_delivery",
        ["next_attempt_at"],
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )
    op.create_table(
        "lsm_webhook_attempt",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("delivery_id", sa.String(36), nullable=False),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("sender", sa.String(200), nullable=False),
    )
    op.create_index("ix_lsm_webhook_attempt_delivery", "lsm_webhook_attempt", ["delivery_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_lsm_webhook_attempt_delivery", table_name="lsm_webhook_attempt")
    op.drop_table("lsm_webhook_attempt")
    op.drop_index("ix_lsm_webhook_delivery_due", table_name="lsm_webhook_delivery")
    op.drop_index("ix_lsm_webhook_delivery_hook", table_name="lsm_webhook_delivery")
    op.drop_table("lsm_webhook_delivery")
    op.drop_index("ix_lsm_webhook_env", table_name="lsm_webhook")
    op.drop_table("lsm_webhook")
    op.drop_index("ix_lsm_resource_action_env", table_name="lsm_resource_action")
