"""The copy-on-write claim, measured in rows and query plans, never in seconds.

A partial export must cost what it carries: the same change writes exactly the same rows in
an environment of 100 sets and in one of 10,000, and no statement it runs scans a table.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.errors import ExportRuleViolation
from lsm.store.database import Database
from tests.desired_state import WriteCounter, new_env, rec, row_counts


def base_export(sets: int) -> ExportRequest:
    """``sets`` sets of one resource each (requiring the shared one), plus one shared resource."""
    return ExportRequest(
        "full",
        sets={f"set-{i:05}": [rec(f"r{i}", requires=("shared",), i=i)] for i in range(sets)},
        shared=[rec("shared")],
    )


def one_set_change() -> ExportRequest:
    """Replace set-00042 (1 resource) with 3 new ones and add 1 shared resource."""
    return ExportRequest(
        "partial",
        sets={"set-00042": [rec("n1", requires=("n2",)), rec("n2", requires=("shared",)), rec("n3", v=1)]},
        shared=[rec("shared"), rec("extra")],
    )


def test_a_partial_export_writes_the_same_rows_whatever_the_inventory_size(db: Database) -> None:
    store = DesiredStateStore(db)
    small, large = new_env(db), new_env(db)
    store.export(small, base_export(100))
    store.export(large, base_export(10_000))

    written: dict[str, int] = {}
    for env in (small, large):
        counts_before = row_counts(db)
        with WriteCounter(db).counting() as counter:
            info = store.export(env, one_set_change())
        counts_after = row_counts(db)
        assert info.sets_replaced == ["set-00042"] and info.number == 2
        written[env] = counter.rows
        # the inserted rows, seen independently of the driver's rowcount
        assert {t: counts_after[t] - counts_before[t] for t in counts_after} == {
            "ds_head": 0,
            "ds_version": 1,
            "ds_set_revision": 1,
            "ds_resource": 4,
        }
    # closed: 1 set revision + 1 resource; inserted: 1 revision + 3 + 1 shared resources + 1 version;
    # updated: the head
    assert written[small] == written[large] == 2 + 5 + 1 + 1
    assert store.content(large, 2).sets["set-00042"] == sorted(
        r.id for r in one_set_change().sets["set-00042"]
    )


def test_an_unchanged_set_in_a_partial_export_writes_nothing_but_the_version(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, base_export(10))
    with WriteCounter(db).counting() as counter:
        store.export(
            env, ExportRequest("partial", sets={"set-00003": [rec("r3", requires=("shared",), i=3)]})
        )
    assert counter.rows == 2  # the version row and the head
    assert store.set_revisions(env, 2)["set-00003"] == 1


def test_a_full_export_writes_only_the_changed_set(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    request = base_export(200)
    store.export(env, request)
    request.sets["set-00007"] = [rec("r7", requires=("shared",), i=-7)]
    with WriteCounter(db).counting() as counter:
        store.export(env, request)
    assert counter.rows == 2 + 2 + 2  # close revision + resource, insert both, version + head


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_no_statement_of_a_partial_export_scans_a_table(db: Database) -> None:
    """SQLite's EXPLAIN QUERY PLAN of every statement a partial export runs: only index lookups."""
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, base_export(300))
    statements: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not many and statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE")):
            statements.append((statement, parameters))

    event.listen(db.write_engine, "before_cursor_execute", capture)
    try:
        store.export(env, one_set_change())
        store.export(env, ExportRequest("partial", sets={"set-00001": []}, deleted_sets=["set-00002"]))
    finally:
        event.remove(db.write_engine, "before_cursor_execute", capture)

    assert len(statements) >= 10
    with db.read() as session:
        conn = session.connection()
        for statement, parameters in statements:
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            assert plan and all(step.startswith("SEARCH") for step in plan), (statement, plan)


def test_records_from_a_large_full_export_read_back_exactly(db: Database) -> None:
    """The bulk path (COPY on PostgreSQL) stores exactly what the small path stores."""
    store = DesiredStateStore(db)
    env = new_env(db)
    sets = {
        f"s{i}": [
            ResourceRecord(f"T[a,k={i}-{j}]", {"q": "tab\there\\ \u00e9", "n": [i, j, None]})
            for j in range(3)
        ]
        for i in range(800)
    }
    store.export(env, ExportRequest("full", sets=sets))
    assert len(store.resources(env, 1)) == 2400
    assert store.resources(env, 1, "s17") == [("s17", r) for r in sets["s17"]]


def explain_all(db: Database, statements: list[tuple[str, Any]]) -> list[tuple[str, list[str]]]:
    with db.read() as session:
        conn = session.connection()
        return [
            (
                statement,
                [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)],
            )
            for statement, parameters in statements
        ]


def captured(engine: Any, statements: list[tuple[str, Any]]) -> Any:
    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not many and statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE")):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    return lambda: event.remove(engine, "before_cursor_execute", capture)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_reads_and_full_exports_only_visit_their_own_environment(db: Database) -> None:
    """Whole-environment queries go through the guarded env indexes: no table scan, so a small
    environment never pays for a large one sharing the database."""
    store = DesiredStateStore(db)
    store.export(new_env(db), base_export(300))
    env = new_env(db)
    statements: list[tuple[str, Any]] = []
    stop_write, stop_read = captured(db.write_engine, statements), captured(db.read_engine, statements)
    try:
        store.export(env, base_export(3))
        store.export(env, base_export(4))
        store.export(env, one_set_change())
        for number in (1, 2, 3):
            store.content(env, number)
            store.resources(env, number)
            store.resources(env, number, "set-00001")
            store.set_revisions(env, number)
        store.list_versions(env)
    finally:
        stop_write()
        stop_read()
    for statement, plan in explain_all(db, statements):
        assert plan and all(step.startswith(("SEARCH", "USE TEMP B-TREE")) for step in plan), (
            statement,
            plan,
        )


def shared_requiring_base(sets: int) -> ExportRequest:
    """``sets`` sets of one resource each, and per set a shared resource requiring that resource."""
    return ExportRequest(
        "full",
        sets={f"set-{i:05}": [rec(f"r{i}", i=i)] for i in range(sets)},
        shared=[rec(f"watch{i}", requires=(f"r{i}",)) for i in range(sets)],
    )


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_the_dangling_requires_check_rides_on_the_reverse_requires_index(db: Database) -> None:
    """Rule 6 for stored shared resources: the same rows are read and written whatever the
    number of shared resources, and every statement is an index search (EXPLAIN QUERY PLAN)."""
    store = DesiredStateStore(db)
    small, large = new_env(db), new_env(db)
    store.export(small, shared_requiring_base(100))
    store.export(large, shared_requiring_base(5_000))
    change = ExportRequest("partial", sets={"set-00042": [rec("r42", i=-42)]})
    written: list[int] = []
    for env in (small, large):
        with WriteCounter(db).counting() as counter:
            store.export(env, change)
        written.append(counter.rows)
        with pytest.raises(ExportRuleViolation, match=r"watch43.*requires.*r43"):
            store.export(env, ExportRequest("partial", deleted_sets=["set-00043"]))
    assert written[0] == written[1] == 2 + 2 + 2  # close revision + resource, insert both, version + head

    statements: list[tuple[str, Any]] = []
    stop = captured(db.write_engine, statements)
    try:
        with pytest.raises(ExportRuleViolation):
            store.export(large, ExportRequest("partial", deleted_sets=["set-00044"]))
    finally:
        stop()
    assert any("ds_shared_require" in statement for statement, _ in statements)
    for statement, plan in explain_all(db, statements):
        assert plan and all(step.startswith("SEARCH") for step in plan), (statement, plan)
