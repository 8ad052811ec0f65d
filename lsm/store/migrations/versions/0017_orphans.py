"""Resources that leave the desired state are removed from their targets, not forgotten.

Revision ID: 0017
Revises: 0016

``lsm_resource_state.removal``: the last desired attributes (stored JSON text, ``purged`` set)
of a resource that left the desired state and whose handler must still delete it from its
target; NULL for a resource of the desired state. The pending removal is a row like any
other, so it survives restarts and moves with its agent name on take-over
(``lsm.store.deploy.removals``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("lsm_resource_state", sa.Column("removal", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lsm_resource_state") as batch:
        batch.drop_column("removal")
