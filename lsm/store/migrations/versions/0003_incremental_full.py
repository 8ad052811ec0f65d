"""Incremental full compiles: what each tree was compiled at, and with which model.

Revision ID: 0003
Revises: 0002

* ``lsm_instance_resources``: ``instance_version`` and ``instance_state``, the instance's
  version and state when its tree was last compiled. Existing rows keep NULL, which means
  "unknown": the instance counts as changed.
* ``lsm_instance_change`` and the trigger on ``lsm_instance`` that fills it: which instances
  changed since a full compile last looked (``lsm.store.instances.changes``). Starts empty:
  the complete compile below does not need it.
* ``lsm_tree_shared``: per tree, the shared resources it produced and their content hash (the
  garbage collection and the conflict check of an incremental full compile). Starts empty.
* ``ds_version.model_fingerprint``: the model a version's sets were refined with. Existing
  versions keep NULL, "unknown": the first full compile after the upgrade refines everything
  (and fills the two above), so an upgraded database never skips a tree on stale records.
* ``ds_version.set_count``: how many sets a version holds, kept running like
  ``resource_count`` so that a compile report can say how many sets it kept without counting
  them. NULL until the next full export.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.instances import changes as instance_changes

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lsm_instance_resources") as batch:
        batch.add_column(sa.Column("instance_version", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("instance_state", sa.String(200), nullable=True))
    op.create_table(
        "lsm_tree_shared",
        sa.Column("set_name", sa.String(255), nullable=False),
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("resource_id", sa.String(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("set_name", "env_id", "resource_id"),
    )
    op.create_index(
        "ix_lsm_tree_shared_resource", "lsm_tree_shared", ["resource_id", "env_id", "content_hash"]
    )
    op.create_table(
        "lsm_instance_change",
        sa.Column("env_id", sa.String(36), nullable=False),
        sa.Column("instance_id", sa.String(36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("env_id", "instance_id"),
    )
    for statement in instance_changes.trigger_statements(op.get_bind().dialect.name):
        op.execute(statement)
    with op.batch_alter_table("ds_version") as batch:
        batch.add_column(sa.Column("model_fingerprint", sa.String(64), nullable=True))
        batch.add_column(sa.Column("set_count", sa.Integer(), nullable=True))
    # The backfill is the NULLs above: an unknown fingerprint makes the next full compile
    # complete, which rewrites every record; nothing is guessed from the old rows.


def downgrade() -> None:
    with op.batch_alter_table("ds_version") as batch:
        batch.drop_column("set_count")
        batch.drop_column("model_fingerprint")
    if op.get_bind().dialect.name == "sqlite":
        for when in ("insert", "update", "delete"):
            op.execute(f"DROP TRIGGER IF EXISTS lsm_instance_change_{when}")
    else:
        op.execute("DROP TRIGGER IF EXISTS lsm_instance_change ON lsm_instance")
        op.execute("DROP FUNCTION IF EXISTS lsm_instance_change()")
    op.drop_table("lsm_instance_change")
    op.drop_index("ix_lsm_tree_shared_resource", table_name="lsm_tree_shared")
    op.drop_table("lsm_tree_shared")
    with op.batch_alter_table("lsm_instance_resources") as batch:
        batch.drop_column("instance_state")
        batch.drop_column("instance_version")
