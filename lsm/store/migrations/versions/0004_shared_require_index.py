"""The reverse-requires index of current shared resources (``ds_shared_require``).

Revision ID: 0004
Revises: 0003

A partial export that deletes or replaces a resource set must refuse to leave a stored shared
resource requiring what the set no longer holds (docs/semantics.md §4, rule 6). The index
answers "which current shared resources require these ids" through its primary key, so the
check costs what the export touches. See ``lsm.store.desired_state.tables``.

The upgrade backfills it from the current shared rows (``set_name = ''``, not superseded) of
every environment, so an upgraded database enforces the rule at once.
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_BATCH = 5000


def upgrade() -> None:
    op.create_table(
        "ds_shared_require",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("required_id", sa.String(), nullable=False),
        sa.Column("requirer_id", sa.String(), nullable=False),
        sa.PrimaryKeyConstraint("required_id", "env_id", "requirer_id", name="pk_ds_shared_require"),
    )
    op.create_index("ix_ds_shared_require_requirer", "ds_shared_require", ["requirer_id", "env_id"])
    _backfill()


def _backfill() -> None:
    """One edge per ``requires`` entry of every current shared row (``requires`` is JSON text)."""
    resources = sa.table(
        "ds_resource",
        sa.column("env_id", sa.String),
        sa.column("resource_id", sa.String),
        sa.column("set_name", sa.String),
        sa.column("superseded_in", sa.Integer),
        sa.column("requires", sa.Text),
    )
    edges = sa.table(
        "ds_shared_require",
        sa.column("env_id", sa.String),
        sa.column("required_id", sa.String),
        sa.column("requirer_id", sa.String),
    )
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(resources.c.env_id, resources.c.resource_id, resources.c.requires).where(
            resources.c.set_name == "", resources.c.superseded_in.is_(None)
        )
    )
    found = sorted(
        {
            (row.env_id, required, row.resource_id)
            for row in rows
            for required in json.loads(row.requires or "[]")
        }
    )
    values = [{"env_id": e, "required_id": r, "requirer_id": s} for e, r, s in found]
    for start in range(0, len(values), _BATCH):
        bind.execute(sa.insert(edges), values[start : start + _BATCH])


def downgrade() -> None:
    op.drop_index("ix_ds_shared_require_requirer", table_name="ds_shared_require")
    op.drop_table("ds_shared_require")
