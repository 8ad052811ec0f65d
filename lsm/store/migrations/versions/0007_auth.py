"""Authentication and the audit trail: API tokens (hashed) and audit lines.

Revision ID: 0007
Revises: 0006

See ``lsm.store.auth.tables`` for why each table has its shape. Nothing is backfilled: a
database upgraded from an older release has no token (the operator creates the first admin
token with ``lsm token create --admin`` before turning authentication on) and an empty audit
table (earlier changes are in the event log and the compile history, which the audit lists too).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_token",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("roles", JsonType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.String(200), nullable=True),
    )
    op.create_index("ix_lsm_token_token_hash", "lsm_token", ["token_hash"], unique=True)
    op.create_table(
        "lsm_audit",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(200), nullable=True),
        sa.Column("request_id", sa.String(100), nullable=True),
        sa.Column("action", sa.String(50), nullable=False),
        sa.Column("target", sa.String(200), nullable=True),
        sa.Column("env_id", sa.String(36), nullable=True),
        sa.Column("details", JsonType, nullable=False),
    )
    op.create_index("ix_lsm_audit_time", "lsm_audit", ["created_at"])
    op.create_index("ix_lsm_audit_actor", "lsm_audit", ["actor", "created_at"])
    op.create_index("ix_lsm_audit_env", "lsm_audit", ["env_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_lsm_audit_env", table_name="lsm_audit")
    op.drop_index("ix_lsm_audit_actor", table_name="lsm_audit")
    op.drop_index("ix_lsm_audit_time", table_name="lsm_audit")
    op.drop_table("lsm_audit")
    op.drop_index("ix_lsm_token_token_hash", table_name="lsm_token")
    op.drop_table("lsm_token")
