"""Full and partial exports: what each kind does to the stored sets, read back exactly."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord, VersionInfo
from lsm.errors import ExportRuleViolation, UnknownEnvironment, UnknownVersion
from lsm.store.database import Database
from tests.desired_state import new_env, rec, rid_of


@pytest.fixture
def store(db: Database) -> DesiredStateStore:
    return DesiredStateStore(db)


@pytest.fixture
def env(db: Database) -> str:
    return new_env(db)


def full(sets: dict[str, list[ResourceRecord]], shared: list[ResourceRecord] | None = None) -> ExportRequest:
    return ExportRequest("full", sets=sets, shared=shared or [])


def partial(
    sets: dict[str, list[ResourceRecord]] | None = None,
    shared: list[ResourceRecord] | None = None,
    **options: Any,
) -> ExportRequest:
    return ExportRequest("partial", sets=sets or {}, shared=shared or [], **options)


def read_back(store: DesiredStateStore, env: str, number: int) -> dict[str | None, dict[str, ResourceRecord]]:
    """Version ``number`` as set -> id -> record (None = shared)."""
    found: dict[str | None, dict[str, ResourceRecord]] = {}
    for set_name, record in store.resources(env, number):
        found.setdefault(set_name, {})[record.id] = record
    return found


def as_state(
    sets: dict[str, list[ResourceRecord]], shared: list[ResourceRecord]
) -> dict[str | None, dict[str, ResourceRecord]]:
    state: dict[str | None, dict[str, ResourceRecord]] = {
        n: {r.id: r for r in rs} for n, rs in sets.items() if rs
    }
    if shared:
        state[None] = {r.id: r for r in shared}
    return state


def test_full_export_round_trips_exactly(store: DesiredStateStore, env: str) -> None:
    sets = {
        "net-1": [
            rec("a", requires=("s",), vlan=1, tags=["x", "y"], nested={"b": {"c": None}, "a": 1.5}),
            rec("b", requires=("a", "s"), name='é ü "quoted"\n'),
        ],
        "net-2": [rec("c", mtu=1500, on=True)],
    }
    shared = [rec("s", requires=("a",), role="shared")]  # shared resources may require anything
    info = store.export(env, full(sets, shared))
    assert info.number == 1 and info.kind == "full" and info.base is None
    assert info.resource_count == 4
    assert read_back(store, env, 1) == as_state(sets, shared)
    content = store.content(env, 1)
    assert content.number == 1
    assert content.sets == {"net-1": [rid_of("a"), rid_of("b")], "net-2": [rid_of("c")]}
    assert content.shared == [rid_of("s")]


def test_version_headers_say_what_changed(store: DesiredStateStore, env: str) -> None:
    before = datetime.now(UTC)
    store.export(env, ExportRequest("full", sets={"a": [rec("a1")], "b": [rec("b1")]}, compile_id="c-1"))
    info = store.export(env, partial({"b": [rec("b2")], "c": [rec("c1")]}, deleted_sets=["a"]))
    assert info == VersionInfo(
        number=2,
        kind="partial",
        base=1,
        compile_id=None,
        created_at=info.created_at,
        sets_replaced=["b", "c"],
        sets_deleted=["a"],
        resource_count=2,
        set_count=2,
    )
    assert store.get_version(env, 2) == info
    first = store.get_version(env, 1)
    assert first.compile_id == "c-1" and first.sets_replaced == ["a", "b"] and first.resource_count == 2
    assert before <= first.created_at <= info.created_at <= datetime.now(UTC)
    assert [v.number for v in store.list_versions(env)] == [2, 1]
    assert [v.number for v in store.list_versions(env, limit=1, offset=1)] == [1]


def test_full_export_rewrites_only_the_set_that_changed(store: DesiredStateStore, env: str) -> None:
    sets = {
        f"net-{i}": [rec(f"r{i}-{j}", requires=(f"r{i}-0",) if j else (), i=i) for j in range(3)]
        for i in range(5)
    }
    store.export(env, full(sets, [rec("s", v=1)]))
    changed = dict(sets)
    changed["net-3"] = [rec("r3-0", i=33), rec("r3-1", i=3)]
    info = store.export(env, full(changed, [rec("s", v=1)]))
    before, after = store.set_revisions(env, 1), store.set_revisions(env, 2)
    assert {name for name in after if after[name] != before[name]} == {"net-3"}
    assert after["net-3"] == 2 and before.keys() == after.keys()
    assert info.sets_replaced == ["net-3"] and info.sets_deleted == []
    assert read_back(store, env, 2) == as_state(changed, [rec("s", v=1)])
    assert read_back(store, env, 1) == as_state(sets, [rec("s", v=1)])


def test_full_export_deletes_absent_sets_and_garbage_collects_shared(
    store: DesiredStateStore, env: str
) -> None:
    store.export(
        env, full({"a": [rec("a1", requires=("s1",))], "b": [rec("b1")]}, [rec("s1"), rec("s2", v=1)])
    )
    info = store.export(env, full({"a": [rec("a1")]}, [rec("s2", v=2), rec("s3")]))
    assert info.sets_deleted == ["b"]
    assert read_back(store, env, 2) == {
        "a": {rid_of("a1"): rec("a1")},
        None: as_state({}, [rec("s2", v=2), rec("s3")])[None],
    }
    assert store.content(env, 2).shared == [rid_of("s2"), rid_of("s3")]
    assert store.content(env, 1).shared == [rid_of("s1"), rid_of("s2")]
    assert info.resource_count == 3


def test_identical_full_export_writes_a_version_and_nothing_else(store: DesiredStateStore, env: str) -> None:
    sets = {"a": [rec("a1", v=1)], "b": [rec("b1")]}
    store.export(env, full(sets, [rec("s")]))
    info = store.export(env, full(sets, [rec("s")]))
    assert (
        info.number == 2 and info.sets_replaced == [] and info.sets_deleted == [] and info.resource_count == 3
    )
    assert store.set_revisions(env, 2) == {"a": 1, "b": 1}


def test_partial_export_replaces_only_the_sets_it_carries(store: DesiredStateStore, env: str) -> None:
    store.export(env, full({"a": [rec("a1"), rec("a2")], "b": [rec("b1")]}, [rec("s")]))
    info = store.export(env, partial({"a": [rec("a3", requires=("s",))]}))
    assert info.sets_replaced == ["a"] and info.resource_count == 3
    assert read_back(store, env, 2) == {
        "a": {rid_of("a3"): rec("a3", requires=("s",))},
        "b": {rid_of("b1"): rec("b1")},
        None: {rid_of("s"): rec("s")},
    }
    assert store.set_revisions(env, 2) == {"a": 2, "b": 1}


def test_partial_export_adds_shared_resources_and_keeps_the_others(
    store: DesiredStateStore, env: str
) -> None:
    store.export(env, full({"a": [rec("a1")]}, [rec("s1", v=1)]))
    info = store.export(env, partial({"b": [rec("b1", requires=("s2",))]}, [rec("s1", v=1), rec("s2", v=2)]))
    assert store.content(env, 2).shared == [rid_of("s1"), rid_of("s2")]
    assert info.resource_count == 4
    # a partial export that carries no shared resource removes none
    store.export(env, partial({"b": [rec("b1")]}))
    assert store.content(env, 3).shared == [rid_of("s1"), rid_of("s2")]


def test_exporting_an_empty_set_deletes_it(store: DesiredStateStore, env: str) -> None:
    store.export(env, full({"a": [rec("a1")], "b": [rec("b1")]}))
    info = store.export(env, partial({"a": []}))
    assert info.sets_deleted == ["a"] and info.sets_replaced == []
    assert store.content(env, 2).sets == {"b": [rid_of("b1")]}


def test_deleted_sets_are_deleted_and_missing_names_ignored(store: DesiredStateStore, env: str) -> None:
    store.export(env, full({"a": [rec("a1")], "b": [rec("b1")], "c": [rec("c1")]}))
    info = store.export(env, partial(deleted_sets=["a", "no-such-set"], sets={"zzz": []}))
    assert info.sets_deleted == ["a"]
    assert store.content(env, 2).sets == {"b": [rid_of("b1")], "c": [rid_of("c1")]}


def test_soft_delete_drops_the_deletion_of_a_set_the_export_fills(store: DesiredStateStore, env: str) -> None:
    store.export(env, full({"a": [rec("a1")], "b": [rec("b1")]}))
    info = store.export(env, partial({"a": [rec("a2")]}, deleted_sets=["a", "b"], soft_delete=True))
    assert info.sets_deleted == ["b"] and info.sets_replaced == ["a"]
    assert store.content(env, 2).sets == {"a": [rid_of("a2")]}


def test_a_resource_moves_between_two_replaced_sets(store: DesiredStateStore, env: str) -> None:
    store.export(env, full({"a": [rec("x"), rec("a1")], "b": [rec("b1")]}))
    store.export(env, partial({"a": [rec("a1")], "b": [rec("b1"), rec("x")]}))
    assert store.content(env, 2).sets == {"a": [rid_of("a1")], "b": [rid_of("b1"), rid_of("x")]}
    # and out of a deleted set
    store.export(env, partial({"c": [rec("x")], "b": [rec("b1")]}))
    store.export(env, partial({"d": [rec("x")]}, deleted_sets=["c"]))
    assert store.content(env, 4).sets == {"a": [rid_of("a1")], "b": [rid_of("b1")], "d": [rid_of("x")]}


def test_resources_of_one_set(store: DesiredStateStore, env: str) -> None:
    store.export(env, full({"a": [rec("a1", v=1)], "b": [rec("b1"), rec("b2")]}, [rec("s")]))
    assert store.resources(env, 1, "a") == [("a", rec("a1", v=1))]
    assert [r.id for _, r in store.resources(env, 1, "b")] == [rid_of("b1"), rid_of("b2")]
    assert store.resources(env, 1, "nope") == []


def test_versions_are_numbered_per_environment(db: Database, store: DesiredStateStore) -> None:
    one, two = new_env(db), new_env(db)
    assert store.latest_version(one) is None
    assert [store.export(one, full({"a": [rec("a")]})).number for _ in range(3)] == [1, 2, 3]
    assert store.export(two, full({"a": [rec("b")]})).number == 1
    assert store.latest_version(one) == 3 and store.latest_version(two) == 1
    assert store.content(two, 1).sets == {"a": [rid_of("b")]}  # same set name, other environment


def test_unknown_version_and_unknown_environment(store: DesiredStateStore, env: str) -> None:
    with pytest.raises(UnknownVersion):
        store.get_version(env, 1)
    with pytest.raises(UnknownVersion):
        store.content(env, 1)
    store.export(env, full({"a": [rec("a")]}))
    for read in (store.get_version, store.content, store.resources, store.set_revisions):
        with pytest.raises(UnknownVersion):
            read(env, 2)
    with pytest.raises(UnknownEnvironment):
        store.export("no-such-environment", full({"a": [rec("a")]}))


def test_export_joins_the_callers_transaction(db: Database, store: DesiredStateStore, env: str) -> None:
    with db.write() as session:
        info = store.export(env, full({"a": [rec("a")]}), session=session)
    assert store.latest_version(env) == info.number == 1
    with pytest.raises(RuntimeError), db.write() as session:
        store.export(env, partial({"b": [rec("b")]}), session=session)
        raise RuntimeError("the caller fails after the export: its transaction rolls back")
    assert store.latest_version(env) == 1


def test_a_rejected_first_export_inside_a_committed_caller_transaction_leaves_no_version(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    # the caller catches the rejection and commits its own work: the head row the export
    # created (at 0) must read as "no version yet"
    with db.write() as session:
        with pytest.raises(ExportRuleViolation):
            store.export(env, full({"a": [rec("x")], "b": [rec("x")]}), session=session)
    assert store.latest_version(env) is None
    with pytest.raises(ExportRuleViolation) as info:
        store.export(env, partial({"a": [rec("x")]}))
    assert info.value.details["rule"] == 7
    assert store.export(env, full({"a": [rec("x")]})).number == 1
    assert store.get_version(env, 1).base is None
