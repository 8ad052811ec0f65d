"""The schema of release 0.1.0 (its ``lsm_schema_version`` said 1): the baseline.

Revision ID: 0001
Revises:

A database made by 0.1.0 already holds these tables (0.1.0 created them with ``create_all``);
``lsm.store.schema`` stamps such a database with this revision and upgrades it from here.
The DDL of that release is kept in ``tests/store/fixtures`` for the upgrade tests.
"""

from __future__ import annotations

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing to do: a database at this revision was created by release 0.1.0."""


def downgrade() -> None:
    """The baseline can not be taken back."""
