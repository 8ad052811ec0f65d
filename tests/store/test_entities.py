"""An environment's catalog rows are registered by any number of processes at once.

A new environment's first work is picked up by several processes at the same moment (a worker
and an agent), and each registers the catalog of the model it loaded. A read-then-insert let
two of them insert the same row, and the loser stopped at start on a primary-key violation.
"""

from __future__ import annotations

import threading

from sqlalchemy import select

from lsm.store.database import Database
from lsm.store.environments.entities import register_entities
from lsm.store.tables import EntityRow, EnvironmentRow

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


def _environment(db: Database) -> str:
    with db.write() as session:
        row = EnvironmentRow(name="catalog-test")
        session.add(row)
        session.flush()
        return row.id


def _rows(db: Database, env_id: str) -> dict[str, tuple[str, dict[str, object], object]]:
    with db.read() as session:
        rows = session.execute(select(EntityRow).where(EntityRow.env_id == env_id)).scalars()  # type: ignore[arg-type]  # reason: SQLModel columns are typed as their values
        return {r.name: (r.lifecycle, r.json_schema, r.updated_at) for r in rows}


def test_many_registrations_at_once_all_succeed_and_leave_one_row_per_entity(db: Database) -> None:
    env_id = _environment(db)
    entities = [(f"e{i}", "simple", SCHEMA) for i in range(20)]
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def register() -> None:
        start.wait()
        try:
            with db.write() as session:
                register_entities(session.connection(), env_id, entities)
        except BaseException as exc:  # recorded: the test fails on any of them
            errors.append(exc)

    threads = [threading.Thread(target=register) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    rows = _rows(db, env_id)
    assert sorted(rows) == sorted(name for name, _, _ in entities)
    assert {lifecycle for lifecycle, _, _ in rows.values()} == {"simple"}


def test_a_changed_entity_is_updated_and_an_unchanged_one_keeps_its_time(db: Database) -> None:
    env_id = _environment(db)
    with db.write() as session:
        register_entities(session.connection(), env_id, [("a", "simple", SCHEMA), ("b", "simple", SCHEMA)])
    before = _rows(db, env_id)
    changed = {**SCHEMA, "required": ["name"]}
    with db.write() as session:
        register_entities(session.connection(), env_id, [("a", "simple", SCHEMA), ("b", "other", changed)])
    after = _rows(db, env_id)
    assert after["a"] == before["a"]
    assert after["b"][:2] == ("other", changed) and after["b"][2] != before["b"][2]
