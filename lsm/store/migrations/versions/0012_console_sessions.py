"""Console sessions of their own; webhook answers out of the delivery log.

Revision ID: 0012
Revises: 0011

``lsm_console_session`` (see ``lsm.store.auth.tables``): the console's cookie carries a
session id instead of the API token. Cookies holding a token from before stop working: their
users log in once more.

The delivery log keeps a receiver's status, no longer its answer (``lsm.services.webhook_send``):
the errors written before, ``HTTP <status>: <up to 500 characters of the answer>``, are cut to
``HTTP <status>``, so that what an internal service answered a webhook is not kept either.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lsm_console_session",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("token_id", sa.String(36), nullable=True),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column("roles", JsonType, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_lsm_console_session_token_id", "lsm_console_session", ["token_id"])
    for table, status, error in (
        ("lsm_webhook_attempt", "status_code", "error"),
        ("lsm_webhook_delivery", "last_status_code", "last_error"),
    ):
        op.execute(
            f"UPDATE {table} SET {error} = 'HTTP ' || CAST({status} AS VARCHAR(10)) "
            f"WHERE {status} IS NOT NULL AND {error} LIKE 'HTTP %: %'"
        )


def downgrade() -> None:
    op.drop_index("ix_lsm_console_session_token_id", table_name="lsm_console_session")
    op.drop_table("lsm_console_session")
