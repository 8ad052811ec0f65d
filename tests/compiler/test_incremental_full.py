"""Incremental full compiles: only what changed is refined, and the result is still a full compile's.

Every test compares with ``CompileRunner.compute_full`` (refining everything) where it can, and
proves cost in rows written and query plans, never in seconds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, update

from lsm.errors import ModelError
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.desired_state.tables import ds_version
from lsm.store.tables import InstanceRow
from tests.desired_state import WriteCounter, row_counts

REPO = Path(__file__).resolve().parent.parent.parent
NETWORKS = str(REPO / "examples" / "networks")
BOXES = REPO / "tests" / "models" / "shared_boxes.py"
AGENT_CONFIG = "net::AgentConfig[internal,name=networks]"


def full(engine: ApiRuntime, env: str | None = None, **options: Any) -> dict[str, Any]:
    """Run one full compile to the end; its report, with the version it made."""
    requested = engine.facades.compiles.request_compile(RequestContext.local(env), kind="full", **options)
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(env), requested.id)
    return {**done.report, "status": done.status, "version": done.desired_state_version}


def bump(engine: ApiRuntime, instance_id: str, **attributes: Any) -> None:
    """Change active attributes and bump the version, as a promote does (no compile requested)."""
    with engine.db.write() as session:
        row = session.get(InstanceRow, instance_id)
        assert row is not None and row.active_attributes is not None
        row.active_attributes = {**row.active_attributes, **attributes}
        row.version += 1
        session.add(row)


def stored(engine: ApiRuntime, env: str | None = None) -> dict[str | None, dict[str, Any]]:
    ctx = engine.context(env)
    latest = engine.store.latest_version(ctx.env_id)
    assert latest is not None
    out: dict[str | None, dict[str, Any]] = {}
    for set_name, record in engine.store.resources(ctx.env_id, latest):
        out.setdefault(set_name, {})[record.id] = record
    return out


def assert_equals_complete(engine: ApiRuntime, env: str | None = None) -> None:
    """The latest version is exactly what refining everything gives, shared set included."""
    expected = engine.processing.runner.compute_full(engine.context(env))
    want: dict[str | None, dict[str, Any]] = {
        name: {r.id: r for r in rs} for name, rs in expected.sets.items()
    }
    if expected.shared:
        want[None] = {r.id: r for r in expected.shared}
    assert stored(engine, env) == want


def seed_boxes(engine: ApiRuntime, *names: str, **attributes: Any) -> list[str]:
    return engine.facades.inventory.import_instances(
        RequestContext.local(), "box", "up", [{"name": n, **attributes} for n in names]
    )


def test_a_full_compile_after_one_change_refines_only_that_tree(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    ids = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 2} for i in range(20)]
    )
    first = full(engine)
    assert first["complete"] == "first compile of the environment"
    bump(engine, ids[3], hosts=4)
    second = full(engine)
    assert second["status"] == "success" and "complete" not in second
    assert second["incremental"] == {
        "changed_instances": 1,
        "trees_refined": 1,
        "sets_deleted": 0,
        "sets_kept": 19,
    }
    assert second["sets_replaced"] == 1 and second["selected"] == {"network": 1}
    assert_equals_complete(engine)
    # nothing changed since: nothing refined, nothing written but the version
    third = full(engine)
    assert third["incremental"]["trees_refined"] == 0 and third["sets_replaced"] == 0
    assert_equals_complete(engine)


def test_incremental_false_refines_everything(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS)
    ids = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 2} for i in range(5)]
    )
    full(engine)
    bump(engine, ids[0], hosts=3)
    report = full(engine, incremental=False)
    assert report["complete"] == "requested (incremental: false)"
    assert report["selected"] == {"network": 5} and report["sets_replaced"] == 1
    assert_equals_complete(engine)


def test_deleted_and_new_trees_are_deleted_and_refined(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS)
    ids = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 1} for i in range(4)]
    )
    full(engine)
    with engine.db.write() as session:  # a terminated instance, and one hard-deleted row
        gone = session.get(InstanceRow, ids[0])
        dropped = session.get(InstanceRow, ids[1])
        assert gone is not None and dropped is not None
        gone.deleted, gone.state, gone.version = True, "terminated", gone.version + 1
        session.add(gone)
        session.delete(dropped)
    engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": "new", "hosts": 1}]
    )
    report = full(engine)
    assert report["incremental"]["sets_deleted"] == 2
    assert report["incremental"]["trees_refined"] == 1
    assert report["incremental"]["sets_kept"] == 2
    assert report["sets_replaced"] == 1  # the new one
    assert_equals_complete(engine)


def test_a_stale_shared_resource_is_collected_by_an_incremental_full_compile(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(str(BOXES))
    a, b = seed_boxes(engine, "a", "b")
    full(engine)
    for box in (a, b):  # every box moves to share "other": partial compiles keep "common"
        instance = engine.facades.inventory.get_instance(RequestContext.local(), "box", box)
        engine.facades.inventory.update_instance(
            RequestContext.local(),
            "box",
            box,
            current_version=instance.version,
            attributes={"share": "other"},
        )
        engine.processing.drain()
    assert set(stored(engine)[None]) == {
        "box::Common[internal,name=common]",
        "box::Common[internal,name=other]",
    }
    report = full(engine)
    assert "complete" not in report and report["shared_retired"] == 1
    assert report["incremental"]["trees_refined"] == 0  # the partial compiles refined both already
    assert set(stored(engine)[None]) == {"box::Common[internal,name=other]"}
    assert_equals_complete(engine)


def test_a_shared_resource_kept_trees_still_produce_stays(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(str(BOXES))
    a, _b = seed_boxes(engine, "a", "b")
    full(engine)
    bump(engine, a, share="mine")  # b (kept, not refined) still shares "common"
    report = full(engine)
    assert report["incremental"]["trees_refined"] == 1 and report["shared_retired"] == 0
    assert set(stored(engine)[None]) == {
        "box::Common[internal,name=common]",
        "box::Common[internal,name=mine]",
    }
    assert_equals_complete(engine)
    bump(engine, a, flavour="spicy")  # only a shares "mine": its content changes, in place
    report = full(engine)
    assert "complete" not in report
    assert_equals_complete(engine)


def test_a_shared_conflict_with_a_kept_tree_fails_as_refining_everything_does(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(str(BOXES))
    a, _b = seed_boxes(engine, "a", "b")
    full(engine)
    before = engine.store.latest_version(engine.context(None).env_id)
    bump(engine, a, flavour="spicy")  # b, not changed, shares "common" as plain
    with pytest.raises(ModelError) as complete_error:
        engine.processing.runner.compute_full(engine.context(None))
    report = full(engine)
    assert report["status"] == "failed"
    assert report["complete"].startswith("the incremental compile failed, so everything is refined")
    assert report["error"]["error"] == "model_error"
    assert report["error"]["message"] == complete_error.value.message
    assert engine.store.latest_version(engine.context(None).env_id) == before


def test_a_model_change_forces_a_complete_compile(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    original, edited = tmp_path / "boxes_v1.py", tmp_path / "boxes_v2.py"
    shutil.copy(BOXES, original)
    edited.write_text(BOXES.read_text().replace("name=b.name, size=b.size", "name=b.name, size=b.size * 2"))
    engine = engine_factory(str(original))
    env = engine.context(None).name
    seed_boxes(engine, "a", "b", size=3)
    full(engine)
    assert "complete" not in full(engine)

    engine.facades.environments.set_model(
        RequestContext.local(env), str(edited)
    )  # the environment now runs the edited model
    report = full(engine)
    assert report["complete"].startswith("the model, its lifecycles, the selector or the engine changed")
    assert report["sets_replaced"] == 2  # every size doubled: nothing could be skipped
    assert_equals_complete(engine)
    assert "complete" not in full(engine)  # the new fingerprint is stored: incremental again


def test_a_partial_compile_with_another_model_makes_the_next_full_complete(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    original, edited = tmp_path / "boxes_v1.py", tmp_path / "boxes_v2.py"
    shutil.copy(BOXES, original)
    edited.write_text(BOXES.read_text() + "\n# edited\n")
    engine = engine_factory(str(original))
    env = engine.context(None).name
    a, _b = seed_boxes(engine, "a", "b")
    full(engine)
    engine.facades.environments.set_model(RequestContext.local(env), str(edited))
    engine.facades.compiles.request_compile(RequestContext.local(), kind="partial", instance_ids=[a])
    engine.processing.drain()
    env_id = engine.context(None).env_id
    latest = engine.store.latest_fingerprint(env_id)
    assert latest is not None and latest[1] is None
    assert engine.store.get_version(env_id, latest[0]).kind == "partial"
    report = full(engine)
    assert report["complete"].startswith("the stored version has no model fingerprint")


def test_a_database_upgraded_without_fingerprints_refines_everything_once(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """What migration 0003 leaves: NULL fingerprints and NULL compiled versions."""
    engine = engine_factory(NETWORKS)
    engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 1} for i in range(3)]
    )
    full(engine)
    with engine.db.write() as session:
        session.execute(update(ds_version).values(model_fingerprint=None))
    assert full(engine)["complete"].startswith("the stored version has no model fingerprint")
    assert "complete" not in full(engine)


def test_a_model_without_files_is_never_incremental(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS)
    engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": "n", "hosts": 1}]
    )
    full(engine)
    model = engine.context(None).model
    saved, model.fingerprint = model.fingerprint, None
    try:
        assert full(engine)["complete"] == "the model has no fingerprint (not loaded from files)"
    finally:
        model.fingerprint = saved


# -- cost: rows and plans -------------------------------------------------------------------------


def _incremental_after_one_change(
    engine: ApiRuntime, env: str | None, networks: int
) -> tuple[WriteCounter, dict[str, int]]:
    ids = engine.facades.inventory.import_instances(
        RequestContext.local(env),
        "network",
        "up",
        [{"name": f"n{i:05}", "hosts": 2} for i in range(networks)],
    )
    full(engine, env)
    bump(engine, ids[42], hosts=3)
    before = row_counts(engine.db)
    requested = engine.facades.compiles.request_compile(RequestContext.local(env), kind="full")
    with WriteCounter(engine.db).counting() as counter:
        engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(env), requested.id)
    assert done.status == "success" and "complete" not in done.report, done.report
    after = row_counts(engine.db)
    return counter, {table: after[table] - before[table] for table in after}


def test_an_incremental_full_compile_writes_the_same_rows_on_100_and_10000_sets(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    engine.facades.environments.create_environment(RequestContext.local(), "large", NETWORKS)
    small, small_rows = _incremental_after_one_change(engine, None, 100)
    large, large_rows = _incremental_after_one_change(engine, "large", 10_000)
    # one set replaced: 1 new revision and its 3 hosts (the old rows are closed, not deleted)
    assert small_rows == large_rows == {"ds_head": 0, "ds_version": 1, "ds_set_revision": 1, "ds_resource": 3}
    assert small.rows == large.rows
    assert small.statements == large.statements
    touched = {
        statement.split()[2]
        for statement, _ in small.statements
        if statement.startswith(("INSERT", "DELETE"))
    }
    assert {"lsm_instance_resources", "lsm_tree_shared"} <= touched


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_no_statement_of_an_incremental_full_compile_scans_a_table(
    engine_factory: Callable[..., ApiRuntime], db: Database
) -> None:
    """SQLite's plan of every statement the compile runs on its own tables: only index searches."""
    engine = engine_factory(NETWORKS)
    ids = engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 2} for i in range(300)]
    )
    full(engine)
    bump(engine, ids[7], hosts=3)
    requested = engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
    statements: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if not many and statement.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE")):
            statements.append((statement, parameters))

    for target in (db.write_engine, db.read_engine):
        event.listen(target, "before_cursor_execute", capture)
    try:
        engine.processing.drain()
    finally:
        for target in (db.write_engine, db.read_engine):
            event.remove(target, "before_cursor_execute", capture)
    assert "complete" not in engine.facades.compiles.get_compile(RequestContext.local(), requested.id).report
    mine = ("lsm_instance_resources", "lsm_instance_change", "lsm_tree_shared", "ds_")
    checked = 0
    with db.read() as session:
        conn = session.connection()
        for statement, parameters in statements:
            if not any(table in statement for table in mine):
                continue
            checked += 1
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            assert plan and all(
                step.startswith(("SEARCH", "USE TEMP B-TREE", "CORRELATED", "LIST SUBQUERY")) for step in plan
            ), (
                statement,
                plan,
            )
    assert checked >= 8


@pytest.mark.parametrize("selector", ["tunnel", "relation_closure"])
def test_a_port_change_refines_the_tunnel_that_reads_it(
    engine_factory: Callable[..., ApiRuntime], selector: str
) -> None:
    """The selector decides what depends on a changed instance: here the tunnel's tree, which is
    not the port's ownership tree (examples/tunnel)."""
    engine = engine_factory(str(REPO / "examples" / "tunnel"), selector=selector)
    routers = engine.facades.inventory.import_instances(
        RequestContext.local(),
        "router",
        "up",
        [{"mgmt_ip": f"10.0.0.{n}", "name": f"r{n}"} for n in (1, 2, 3)],
    )
    ports = engine.facades.inventory.import_instances(
        RequestContext.local(), "port", "up", [{"router": r, "name": "eth0"} for r in routers]
    )
    [tunnel] = engine.facades.inventory.import_instances(
        RequestContext.local(), "tunnel", "up", [{"name": "t1", "a": ports[0], "b": ports[1], "key": "k"}]
    )
    full(engine)
    bump(engine, ports[0], mtu=9000)
    report = full(engine)
    assert "complete" not in report
    # r1's tree, the tunnel's and r2's (the tunnel reads its port); r3 is in no selection
    # refined: r1's tree, the tunnel's, r2's (the tunnel reads it); written: r1's and the tunnel's
    # sets (r2's refined into the same content); kept: r2's and r3's
    assert (report["incremental"]["trees_refined"], report["incremental"]["sets_kept"]) == (3, 2)
    assert report["sets_replaced"] == 2
    endpoint = next(
        r
        for name, r in engine.store.resources(engine.context(None).env_id, report["version"])
        if name == tunnel and "10.0.0.1" in r.id
    )
    assert endpoint.attributes["mtu"] == 9000
    assert_equals_complete(engine)
