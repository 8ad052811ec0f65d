"""Retention: old versions go, with every row no kept version can read; kept ones stay exact."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, func, select

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.errors import InvalidInput, UnknownVersion
from lsm.store.database import Database
from lsm.store.desired_state.tables import ds_resource, ds_set_revision
from tests.desired_state import new_env, rec, row_counts

History = dict[int, list[tuple[str | None, ResourceRecord]]]


def build_history(store: DesiredStateStore, env: str) -> History:
    """Six versions mixing full and partial exports, moves, deletions and shared changes."""
    requests = [
        ExportRequest("full", sets={"a": [rec("a1"), rec("x")], "b": [rec("b1")]}, shared=[rec("s1")]),
        ExportRequest("partial", sets={"a": [rec("a1", v=2)], "b": [rec("b1"), rec("x")]}),
        ExportRequest("partial", sets={"c": [rec("c1", requires=("s2",))]}, shared=[rec("s2")]),
        ExportRequest("full", sets={"a": [rec("a1", v=2)], "c": [rec("c1")]}, shared=[rec("s3")]),
        ExportRequest("partial", sets={"d": [rec("d1")]}, deleted_sets=["a"]),
        ExportRequest("partial", sets={"c": [rec("c1", v=6)]}),
    ]
    history: History = {}
    for request in requests:
        number = store.export(env, request).number
        history[number] = store.resources(env, number)
    return history


def dead_rows(db: Database, env: str, oldest_kept: int) -> int:
    with db.read() as session:
        conn = session.connection()
        return sum(
            conn.execute(
                select(func.count()).where(table.c.env_id == env, table.c.superseded_in <= oldest_kept)
            ).scalar_one()
            for table in (ds_resource, ds_set_revision)
        )


def test_collect_garbage_keeps_the_newest_versions_exactly(db: Database) -> None:
    store = DesiredStateStore(db)
    env, other = new_env(db), new_env(db)
    history = build_history(store, env)
    other_history = build_history(store, other)
    rows_before = row_counts(db)

    assert store.collect_garbage(env, keep=2) == 4
    assert [v.number for v in store.list_versions(env)] == [6, 5]
    for number in (1, 2, 3, 4):
        with pytest.raises(UnknownVersion):
            store.resources(env, number)
    for number in (5, 6):
        assert store.resources(env, number) == history[number]
    assert dead_rows(db, env, 5) == 0
    assert row_counts(db)["ds_resource"] < rows_before["ds_resource"]
    # the other environment is untouched
    for number, resources in other_history.items():
        assert store.resources(other, number) == resources

    # exports continue from the kept head, and the kept versions stay readable
    assert store.export(env, ExportRequest("partial", sets={"e": [rec("e1")]})).number == 7
    assert store.resources(env, 5) == history[5]
    assert store.collect_garbage(env, keep=1) == 2
    assert [v.number for v in store.list_versions(env)] == [7]
    assert {r.id for _, r in store.resources(env, 7)} == {r.id for _, r in history[6]} | {rec("e1").id}


def test_collect_garbage_with_fewer_versions_than_kept_does_nothing(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    assert store.collect_garbage(env, keep=3) == 0
    store.export(env, ExportRequest("full", sets={"a": [rec("a1")]}))
    before = row_counts(db)
    assert store.collect_garbage(env, keep=3) == 0
    assert row_counts(db) == before


def test_retention_keeps_at_least_one_version(db: Database) -> None:
    with pytest.raises(InvalidInput):
        DesiredStateStore(db).collect_garbage(new_env(db), keep=0)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_retention_costs_the_garbage_not_the_environment(db: Database) -> None:
    """SQLite's EXPLAIN QUERY PLAN of every statement retention runs: only index searches."""
    store = DesiredStateStore(db)
    env = new_env(db)
    build_history(store, env)
    statements: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not statement.startswith("BEGIN"):
            statements.append((statement, parameters))

    event.listen(db.write_engine, "before_cursor_execute", capture)
    try:
        assert store.collect_garbage(env, keep=2) == 4
    finally:
        event.remove(db.write_engine, "before_cursor_execute", capture)
    assert len(statements) == 5
    with db.read() as session:
        conn = session.connection()
        for statement, parameters in statements:
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            assert plan and all(step.startswith(("SEARCH", "USE TEMP B-TREE")) for step in plan), (
                statement,
                plan,
            )
