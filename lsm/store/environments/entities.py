"""An environment's catalog rows (``lsm_entity``): name, lifecycle and JSON schema per entity.

Why an upsert: every process that loads an environment's model registers its catalog, and two
processes load a new environment at the same moment (an agent and a worker picking up its
first work). A read-then-insert let both see no row and the second insert fail on the primary
key, which stopped that process at start. ``INSERT ... ON CONFLICT DO UPDATE`` makes the
registration one statement per entity that any number of processes may run at once; the
update applies only when the lifecycle or the schema changed, so an unchanged catalog keeps
its ``updated_at``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, or_
from sqlalchemy.dialects import postgresql, sqlite

from lsm.store.tables import EntityRow, utcnow

__all__ = ["register_entities"]

_entity = EntityRow.__table__  # type: ignore[attr-defined]  # reason: SQLModel declares __table__ at run time


def register_entities(
    conn: Connection, env_id: str, entities: Iterable[tuple[str, str, dict[str, Any]]]
) -> None:
    """Insert or update each ``(name, lifecycle, json_schema)`` of environment ``env_id``."""
    dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    now = utcnow()
    for name, lifecycle, schema in entities:
        statement = dialect_insert(_entity).values(
            env_id=env_id, name=name, lifecycle=lifecycle, json_schema=schema, updated_at=now
        )
        excluded = statement.excluded
        conn.execute(
            statement.on_conflict_do_update(
                index_elements=[_entity.c.env_id, _entity.c.name],
                set_={
                    "lifecycle": excluded.lifecycle,
                    "json_schema": excluded.json_schema,
                    "updated_at": now,
                },
                where=or_(
                    _entity.c.lifecycle != excluded.lifecycle,
                    _entity.c.json_schema != excluded.json_schema,
                ),
            )
        )
