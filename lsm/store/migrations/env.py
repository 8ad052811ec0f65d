"""Alembic's entry point: run the migrations on the connection ``lsm.store.schema`` hands in.

There is no ``alembic.ini`` and no URL here: the engine migrates its own database when a
process starts (``Database.create_schema``), inside the transaction and lock it already holds.
"""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from lsm.store import tables  # noqa: F401  (registers the tables)
from lsm.store.desired_state import tables as desired_state_tables  # noqa: F401  (registers the tables)

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
