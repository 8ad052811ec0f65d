"""The deploy engine: resource state, requires edges, the action log, the planner's cursor.

Revision ID: 0005
Revises: 0004

See ``lsm.store.deploy.tables`` for why each table has its shape. Nothing is backfilled:
the planner starts at version 0 for every environment (no ``lsm_deploy_head`` row), so the
first agent to run plans the newest desired-state version of each environment whole, once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_OPEN = sa.text("status IN ('pending', 'deploying')")
_POLL = sa.text("poll_at IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "lsm_resource_state",
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(255), nullable=False),
        sa.Column("set_name", sa.String(255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("desired_hash", sa.String(64), nullable=False),
        sa.Column("deployed_hash", sa.String(64), nullable=True),
        sa.Column("last_deployed_version", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("purged", sa.Boolean(), nullable=False),
        sa.Column("requires", JsonType, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default=sa.text("0")),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_action", sa.String(20), nullable=True),
        sa.Column("last_action_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("poll_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("bucket_tokens", sa.Float(), nullable=True),
        sa.Column("bucket_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.PrimaryKeyConstraint("resource_id", "env_id", name="pk_lsm_resource_state"),
    )
    op.create_index(
        "ix_lsm_resource_state_open",
        "lsm_resource_state",
        ["env_id", "agent", "status"],
        sqlite_where=_OPEN,
        postgresql_where=_OPEN,
    )
    op.create_index("ix_lsm_resource_state_agent", "lsm_resource_state", ["env_id", "agent", "resource_id"])
    op.create_index("ix_lsm_resource_state_env", "lsm_resource_state", ["env_id", "resource_id"])
    op.create_index("ix_lsm_resource_state_status", "lsm_resource_state", ["env_id", "status", "resource_id"])
    op.create_index(
        "ix_lsm_resource_state_type", "lsm_resource_state", ["env_id", "resource_type", "resource_id"]
    )
    op.create_index(
        "ix_lsm_resource_state_poll",
        "lsm_resource_state",
        ["env_id", "poll_at"],
        sqlite_where=_POLL,
        postgresql_where=_POLL,
    )
    op.create_table(
        "lsm_resource_require",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("required_id", sa.String(), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("required_id", "env_id", "resource_id", name="pk_lsm_resource_require"),
    )
    op.create_index("ix_lsm_resource_require_requirer", "lsm_resource_require", ["resource_id", "env_id"])
    op.create_table(
        "lsm_resource_action",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("changes", JsonType, nullable=False),
        sa.Column("messages", JsonType, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False, server_default=sa.text("false")),
    )
    op.create_index("ix_lsm_resource_action_resource", "lsm_resource_action", ["resource_id", "env_id", "id"])
    op.create_table(
        "lsm_deploy_head",
        sa.Column("env_id", sa.String(36), primary_key=True),
        sa.Column("planned_version", sa.Integer(), nullable=False),
    )

    # the instance's desired_state_version when its resources were compiled: the deploy engine's
    # lifecycle feedback fires only for an instance whose record matches its desired state
    with op.batch_alter_table("lsm_instance_resources") as batch:
        batch.add_column(sa.Column("instance_desired_state_version", sa.Integer(), nullable=True))
    # the deploy planner finds the records written since its last plan through it
    op.create_index(
        "ix_lsm_instance_resources_version", "lsm_instance_resources", ["env_id", "desired_state_version"]
    )


def downgrade() -> None:
    op.drop_index("ix_lsm_instance_resources_version", table_name="lsm_instance_resources")
    with op.batch_alter_table("lsm_instance_resources") as batch:
        batch.drop_column("instance_desired_state_version")
    op.drop_table("lsm_deploy_head")
    op.drop_index("ix_lsm_resource_action_resource", table_name="lsm_resource_action")
    op.drop_table("lsm_resource_action")
    op.drop_index("ix_lsm_resource_require_requirer", table_name="lsm_resource_require")
    op.drop_table("lsm_resource_require")
    op.drop_index("ix_lsm_resource_state_poll", table_name="lsm_resource_state")
    op.drop_index("ix_lsm_resource_state_type", table_name="lsm_resource_state")
    op.drop_index("ix_lsm_resource_state_status", table_name="lsm_resource_state")
    op.drop_index("ix_lsm_resource_state_env", table_name="lsm_resource_state")
    op.drop_index("ix_lsm_resource_state_agent", table_name="lsm_resource_state")
    op.drop_index("ix_lsm_resource_state_open", table_name="lsm_resource_state")
    op.drop_table("lsm_resource_state")
