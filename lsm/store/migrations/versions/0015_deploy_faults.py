"""Deploy claims that can be taken back and lifecycle feedback that survives a crash.

Revision ID: 0015
Revises: 0012

* ``lsm_resource_state.claimed_at`` and the partial index ``ix_lsm_resource_state_claimed``:
  a claim older than the agents' lease is re-examined by its holder (one it no longer runs
  goes back to ``pending``), without reading the environment's other rows.
* ``lsm_deploy_feedback``: deploy results (and plans) whose lifecycle feedback has not run
  yet, written with the results; the recovery pass of the next agent finishes what a crash
  interrupted (``lsm.deploy.recovery``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0015"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("lsm_resource_state", sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index(
        "ix_lsm_resource_state_claimed",
        "lsm_resource_state",
        ["claimed_at"],
        sqlite_where=sa.text("status = 'deploying'"),
        postgresql_where=sa.text("status = 'deploying'"),
    )
    op.create_table(
        "lsm_deploy_feedback",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
        ),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("set_names", JsonType, nullable=False),
        sa.Column("resource_ids", JsonType, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lsm_deploy_feedback")
    op.drop_index("ix_lsm_resource_state_claimed", table_name="lsm_resource_state")
    with op.batch_alter_table("lsm_resource_state") as batch:
        batch.drop_column("claimed_at")
