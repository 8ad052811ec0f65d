"""The service runtime: leased compile requests, typed parameters, actors, leases, schedules.

Revision ID: 0002
Revises: 0001

* ``lsm_compile``: ``params`` (what a request needs to run; a validation's expected instance
  version, trigger and target move here out of ``report``), the lease (``lease_owner``,
  ``lease_expires``, ``attempts``), who asked (``actor``, ``request_id``), and a partial index
  on the active rows so that finding work never scans the history.
* ``lsm_event``: ``actor`` and ``request_id``.
* ``lsm_lease`` (named leases: the scheduler, the SQLite worker) and ``lsm_schedule`` (the
  last tick of each periodic job per environment).
* ``lsm_schema_version`` goes: Alembic's ``alembic_version`` records the schema now.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from lsm.store.database import JsonType

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_PARAM_KEYS = ("instance_version", "trigger", "target")


def upgrade() -> None:
    with op.batch_alter_table("lsm_compile") as batch:
        batch.add_column(sa.Column("params", JsonType, nullable=False, server_default=sa.text("'{}'")))
        batch.add_column(sa.Column("lease_owner", sa.String(200), nullable=True))
        batch.add_column(sa.Column("lease_expires", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default=sa.text("0")))
        batch.add_column(sa.Column("actor", sa.String(200), nullable=True))
        batch.add_column(sa.Column("request_id", sa.String(100), nullable=True))
    op.create_index(
        "ix_lsm_compile_active",
        "lsm_compile",
        ["status", "env_id", "kind"],
        sqlite_where=sa.text("status IN ('queued', 'running')"),
        postgresql_where=sa.text("status IN ('queued', 'running')"),
    )
    _move_validation_params()
    with op.batch_alter_table("lsm_event") as batch:
        batch.add_column(sa.Column("actor", sa.String(200), nullable=True))
        batch.add_column(sa.Column("request_id", sa.String(100), nullable=True))
    op.create_table(
        "lsm_lease",
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("info", JsonType, nullable=False),
    )
    op.create_table(
        "lsm_schedule",
        sa.Column("env_id", sa.String(36), primary_key=True),
        sa.Column("job", sa.String(50), primary_key=True),
        sa.Column("last_tick", sa.DateTime(timezone=True), nullable=True),
    )
    op.drop_table("lsm_schema_version")


def _move_validation_params() -> None:
    """Validations still waiting carry their parameters in ``report``: move them to ``params``."""
    compiles = sa.table(
        "lsm_compile",
        sa.column("id", sa.String),
        sa.column("kind", sa.String),
        sa.column("status", sa.String),
        sa.column("params", JsonType),
        sa.column("report", JsonType),
    )
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(compiles.c.id, compiles.c.report).where(
            compiles.c.kind == "validation", compiles.c.status.in_(["queued", "running"])
        )
    ).all()
    for row in rows:
        report = dict(row.report or {})
        params = {key: report.pop(key) for key in _PARAM_KEYS if key in report}
        bind.execute(sa.update(compiles).where(compiles.c.id == row.id).values(params=params, report=report))


def downgrade() -> None:
    op.create_table(
        "lsm_schema_version",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.execute(
        sa.text("INSERT INTO lsm_schema_version (id, version, updated_at) VALUES (1, 1, CURRENT_TIMESTAMP)")
    )
    op.drop_table("lsm_schedule")
    op.drop_table("lsm_lease")
    with op.batch_alter_table("lsm_event") as batch:
        batch.drop_column("request_id")
        batch.drop_column("actor")
    op.drop_index("ix_lsm_compile_active", table_name="lsm_compile")
    with op.batch_alter_table("lsm_compile") as batch:
        for name in ("request_id", "actor", "attempts", "lease_expires", "lease_owner", "params"):
            batch.drop_column(name)
