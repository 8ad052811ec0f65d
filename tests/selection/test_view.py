"""InventoryView: one fetch per row, batched walks, read-only answers, cost bound by rows touched."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import event as sa_event

from lsm.errors import UnknownEntity, UnknownInstance
from lsm.selection import (
    AttributeSetName,
    InstanceRecord,
    InventoryView,
    OwnerTreeSelector,
    Relation,
    run_selector,
)
from lsm.store.database import Database
from lsm.store.tables import InstanceRow
from tests.selection import CATALOG, Inventory, count_statements, tree_selection


def test_get_hides_terminated_instances_unless_asked(db: Database) -> None:
    inv = Inventory(db)
    live = inv.add("router", name="a")
    gone = inv.add("router", name="b", deleted=True)
    inv.flush()
    view = inv.view()
    record = view.get(live)
    assert isinstance(record, InstanceRecord) and record.entity == "router" and not record.terminated
    assert view.get(gone) is None
    terminated = view.get(gone, include_terminated=True)
    assert terminated is not None and terminated.terminated
    assert view.get("no-such-id") is None
    with pytest.raises(UnknownInstance) as info:
        view.require("no-such-id")
    assert info.value.details["instance_id"] == "no-such-id"


def test_each_row_is_fetched_once_per_view(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    view = inv.view()
    with count_statements(db) as statements:
        view.get(tree["router"])
        first = len(statements)
        view.get(tree["router"])
        view.owner(tree["router"])
        view.attribute(tree["router"], "name")
        view.get("unknown")
        view.get("unknown")
    assert first >= 1
    assert len(statements) == first * 2  # the router once, the unknown id once, nothing else
    assert view.queries == 2


def test_attribute_comes_from_the_set_the_compile_chooses(db: Database) -> None:
    inv = Inventory(db)
    router = inv.add("router", name="active-name")
    other = inv.add("router", name="other")
    inv.flush()
    with db.write() as session:
        row = session.get(InstanceRow, router)
        assert row is not None
        row.candidate_attributes = {"name": "candidate-name", "site": "ams"}

    def choose(record: InstanceRecord) -> AttributeSetName | None:
        return "candidate" if record.id == router else None

    view = InventoryView(db, inv.env_id, CATALOG, attribute_set=choose)
    assert view.attribute_set_name(router) == "candidate"
    assert view.attribute(router, "name") == "candidate-name"
    assert view.attribute(other, "name", "fallback") == "fallback"  # no set: left out
    assert view.attributes(other) is None
    values = view.attributes(router)
    assert values is not None
    with pytest.raises(TypeError):
        values["name"] = "changed"  # type: ignore[index]  # writing to a read-only view is the point
    assert inv.view().attribute(router, "name") == "active-name"  # the default chooser


def test_owner_and_children_over_several_child_bindings(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree(ports=2)
    deleted_port = inv.add("port", owner=tree["router"], deleted=True)
    inv.flush()
    view = inv.view()
    assert view.owner(tree["router"]) is None
    assert view.owner(tree["ports"][0]) == tree["router"]
    assert view.owner(tree["subs"][1]) == tree["ports"][1]
    assert view.children(tree["router"]) == sorted([*tree["ports"], tree["loopback"]])
    assert deleted_port in view.children(tree["router"], include_terminated=True)
    assert view.children(tree["subs"][0]) == []
    with pytest.raises(UnknownInstance):
        view.owner("no-such-id")


def test_children_many_is_one_query_per_chunk_and_caches_child_rows(db: Database) -> None:
    inv = Inventory(db)
    trees = [inv.router_tree(f"r{i}", ports=3) for i in range(5)]
    inv.flush()
    view = inv.view(chunk_size=2)
    routers = [t["router"] for t in trees]
    with count_statements(db) as statements:
        children = view.children_many(routers)
        queries = view.queries
        for tree in trees:  # rows of every child came with the children query
            for port in tree["ports"]:
                assert view.get(port) is not None
    assert queries == 3  # ceil(5 / 2)
    assert view.queries == 3
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 3
    assert children == {t["router"]: sorted([*t["ports"], t["loopback"]]) for t in trees}


def test_references_both_ways(db: Database) -> None:
    inv = Inventory(db)
    r1, r2 = inv.router_tree("r1"), inv.router_tree("r2")
    tunnel = inv.add("tunnel", refs={"a": r1["ports"][0], "b": r2["ports"][1]})
    inv.flush()
    view = inv.view()
    assert view.references_from(tunnel) == [
        Relation(tunnel, "a", r1["ports"][0]),
        Relation(tunnel, "b", r2["ports"][1]),
    ]
    to_port = view.references_to(r1["ports"][0])
    assert set(to_port) == {
        Relation(r1["subs"][0], "port", r1["ports"][0]),
        Relation(tunnel, "a", r1["ports"][0]),
    }
    assert to_port == sorted(to_port)
    assert view.references_to(tunnel) == []
    many = view.references_to_many([r2["ports"][1], r2["router"]])
    assert Relation(tunnel, "b", r2["ports"][1]) in many[r2["ports"][1]]
    assert {rel.source_id for rel in many[r2["router"]]} == {*r2["ports"], r2["loopback"]}


def test_instances_of_filters_states_and_terminated_and_stays_in_its_environment(db: Database) -> None:
    inv = Inventory(db)
    up = inv.add("router", name="up")
    failed = inv.add("router", name="failed", state="failed")
    gone = inv.add("router", name="gone", deleted=True)
    inv.flush()
    other = Inventory(db, name="other")
    other.add("router", name="elsewhere")
    other.flush()
    view = inv.view()
    assert {r.id for r in view.instances_of("router")} == {up, failed}
    assert {r.id for r in view.instances_of("router", include_terminated=True)} == {up, failed, gone}
    assert [r.id for r in view.instances_of("router", states=["failed"])] == [failed]
    assert view.instances_of("port") == []
    with pytest.raises(UnknownEntity):
        view.instances_of("no_such_entity")


def test_a_session_view_reads_inside_the_callers_transaction(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    with db.read() as session:
        view = InventoryView(session, inv.env_id, CATALOG)
        selector = OwnerTreeSelector(view, CATALOG)
        assert run_selector(selector, [tree["subs"][0]]) == tree_selection(tree)


def _walk_statements(db: Database, inv: Inventory, leaf: str) -> int:
    with db.read() as session, count_statements(db) as statements:
        view = InventoryView(session, inv.env_id, CATALOG)
        selector = OwnerTreeSelector(view, CATALOG)
        run_selector(selector, [leaf])
        selector.roots()
    return len(statements)


def test_a_tree_walk_costs_the_same_for_10_and_1000_trees(db: Database) -> None:
    inv = Inventory(db)
    trees = [inv.router_tree(f"r{i}") for i in range(10)]
    inv.flush()
    leaf = trees[3]["subs"][1]
    small = _walk_statements(db, inv, leaf)
    for i in range(990):
        inv.router_tree(f"more{i}")
    inv.flush()
    large = _walk_statements(db, inv, leaf)
    assert small == large
    # up: sub-interface, port, router; down: three levels of children (+ BEGIN on SQLite)
    assert large <= 7


def _plans(db: Database, run: Callable[[], object]) -> list[str]:
    """SQLite's query plan of every statement ``run()`` sends (parameters included)."""
    sent: list[tuple[str, object]] = []

    def _record(conn: object, cursor: object, statement: str, parameters: object, *args: object) -> None:
        sent.append((statement, parameters))

    sa_event.listen(db.read_engine, "before_cursor_execute", _record)
    try:
        run()
    finally:
        sa_event.remove(db.read_engine, "before_cursor_execute", _record)
    with db.read_engine.connect() as conn:
        return [
            " | ".join(str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {s}", p).fetchall())  # type: ignore[arg-type]  # the statement's parameters as sent, a tuple or a dict
            for s, p in sent
            if s.lstrip().upper().startswith("SELECT")
        ]


def test_long_id_lists_are_looked_up_by_key_not_by_scanning_the_environment(db: Database) -> None:
    """With ``env_id = ?`` beside a long ``IN`` list SQLite walked every instance (or relation)
    of the environment through another index: 18 ms for 500 ids among 40,000, growing with the
    inventory. Each lookup must probe its key instead; and an id of another environment is
    still not this view's."""
    if not db.is_sqlite:
        pytest.skip("a SQLite query-planner property (PostgreSQL plans from its statistics)")
    inv = Inventory(db)
    trees = [inv.router_tree(f"r{i}") for i in range(260)]
    inv.flush()
    other = Inventory(db, name="other")
    stranger = other.add("router", name="elsewhere")
    other.flush()
    ports = [p for t in trees for p in t["ports"]]
    assert len(ports) >= 500

    with db.read() as session:
        view = InventoryView(session, inv.env_id, CATALOG)
        found: dict[str, InstanceRecord] = {}
        refs: dict[str, list[Relation]] = {}

        def lookups() -> None:
            found.update(view.get_many([*ports, stranger]))
            refs.update(view.references_to_many(ports))

        plans = _plans(db, lookups)
    assert set(found) == set(ports)  # the other environment's router is not seen
    assert all(refs[p] for p in ports[:3])  # sub-interfaces point at the first ports
    assert plans, "no SELECT was sent"
    for plan in plans:
        assert "(id=?)" in plan or "target_id=?" in plan, plan
