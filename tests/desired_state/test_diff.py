"""The difference of two desired-state versions: exact, in both directions, and cheap.

Exact: applied to version a, diff(a, b) gives version b, for random histories of full and
partial exports (Hypothesis), and diff(a, a) is empty. Cheap: it reads only the sets written
between the two versions, through indexes (EXPLAIN QUERY PLAN), whatever the version size.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord, VersionDiff
from lsm.desired_state.records import canonical_json
from lsm.errors import UnknownVersion
from lsm.store.database import Database
from tests.desired_state import new_env, rec, rid_of

State = dict[str, tuple[str | None, ResourceRecord]]


def state_of(store: DesiredStateStore, env: str, number: int) -> State:
    return {record.id: (name, record) for name, record in store.resources(env, number)}


def apply_diff(state: State, diff: VersionDiff) -> State:
    """Apply ``diff`` to ``state``, checking that its "before" sides match what is there."""
    result = dict(state)
    for change in diff.resources:
        if change.change == "added":
            assert change.id not in result, change
        else:
            assert result[change.id] == (change.set_before, change.before), change
        if change.change == "removed":
            del result[change.id]
        else:
            assert change.after is not None
            result[change.id] = (change.set_after, change.after)
    return result


Canon = dict[str, tuple[str | None, str, tuple[str, ...]]]


def canon(state: State) -> Canon:
    """The state as stored texts: 1, 1.0 and True are three values here, as in the store."""
    return {rid: (name, canonical_json(r.attributes), r.requires) for rid, (name, r) in state.items()}


def sets_of(state: State) -> dict[str, Canon]:
    found: dict[str, Canon] = {}
    for rid, entry in canon(state).items():
        if entry[0] is not None:
            found.setdefault(entry[0], {})[rid] = entry
    return found


def check_diff(store: DesiredStateStore, env: str, a: int, b: int) -> VersionDiff:
    """diff(a, b) applied to a gives b, and names exactly the sets whose content differs."""
    before, after = state_of(store, env, a), state_of(store, env, b)
    diff = store.diff(env, a, b)
    assert (diff.from_version, diff.to_version) == (a, b)
    assert canon(apply_diff(before, diff)) == canon(after)
    sets_before, sets_after = sets_of(before), sets_of(after)
    expected = {
        name: ("added" if name not in sets_before else "removed" if name not in sets_after else "changed")
        for name in sets_before.keys() | sets_after.keys()
        if sets_before.get(name) != sets_after.get(name)
    }
    assert {s.name: s.change for s in diff.sets} == expected
    for s in diff.sets:
        assert (s.before_count, s.after_count) == (
            len(sets_before.get(s.name, {})),
            len(sets_after.get(s.name, {})),
        )
    for change in diff.resources:
        if change.change == "changed":
            assert change.before is not None and change.after is not None and change.fields
            was, now = change.before.attributes, change.after.attributes
            assert set(change.fields) - {"requires", "set"} == {
                k
                for k in was.keys() | now.keys()
                if k not in was or k not in now or canonical_json(was[k]) != canonical_json(now[k])
            }
            assert ("requires" in change.fields) == (change.before.requires != change.after.requires)
            assert ("set" in change.fields) == (change.set_before != change.set_after)
    return diff


def test_sets_and_resources_added_removed_and_changed(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(
        env,
        ExportRequest(
            "full",
            sets={
                "keep": [rec("k1", v=1)],
                "edit": [rec("e1", v=1, w="x"), rec("e2", v=2)],
                "gone": [rec("g1")],
                "from": [rec("mover", v=5)],
            },
            shared=[rec("sh", v=1)],
        ),
    )
    store.export(
        env,
        ExportRequest(
            "full",
            sets={
                "keep": [rec("k1", v=1)],
                "edit": [rec("e1", v=2, w="x"), rec("e2", requires=("e1",), v=2), rec("e3")],
                "new": [rec("n1")],
                "from": [],
                "to": [rec("mover", v=5)],
            },
            shared=[rec("sh", v=2)],
        ),
    )
    diff = check_diff(store, env, 1, 2)
    assert [(s.name, s.change, s.before_count, s.after_count) for s in diff.sets] == [
        ("edit", "changed", 2, 3),
        ("from", "removed", 1, 0),
        ("gone", "removed", 1, 0),
        ("new", "added", 0, 1),
        ("to", "added", 0, 1),
    ]
    by_id = {c.id: c for c in diff.resources}
    assert by_id[rid_of("e1")].fields == ("v",)
    assert by_id[rid_of("e2")].fields == ("requires",)
    assert by_id[rid_of("e3")].change == "added" and by_id[rid_of("e3")].set_after == "edit"
    assert by_id[rid_of("g1")].change == "removed" and by_id[rid_of("g1")].set_before == "gone"
    assert by_id[rid_of("n1")].change == "added"
    mover = by_id[rid_of("mover")]
    assert (mover.change, mover.set_before, mover.set_after, mover.fields) == (
        "changed",
        "from",
        "to",
        ("set",),
    )
    shared = by_id[rid_of("sh")]
    assert (shared.set_before, shared.set_after, shared.fields) == (None, None, ("v",))
    assert rid_of("k1") not in by_id  # an unchanged set is not even read
    assert set(by_id) == {rid_of(s) for s in ("e1", "e2", "e3", "g1", "n1", "mover", "sh")}

    back = check_diff(store, env, 2, 1)  # the other way round: the mirror image
    assert [(s.name, s.change) for s in back.sets] == [
        ("edit", "changed"),
        ("from", "added"),
        ("gone", "added"),
        ("new", "removed"),
        ("to", "removed"),
    ]
    assert check_diff(store, env, 2, 2).empty and check_diff(store, env, 1, 1).empty


def test_a_set_changed_and_changed_back_is_not_a_difference(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [rec("r1", v=1)], "b": [rec("r2")]}))
    store.export(env, ExportRequest("partial", sets={"a": [rec("r1", v=2)]}))
    store.export(env, ExportRequest("partial", sets={"a": [rec("r1", v=1)]}))
    assert store.set_revisions(env, 1)["a"] != store.set_revisions(env, 3)["a"]  # another revision
    assert check_diff(store, env, 1, 3).empty
    assert [c.fields for c in check_diff(store, env, 2, 3).resources] == [("v",)]


def test_attribute_values_are_compared_as_stored(db: Database) -> None:
    """1, 1.0 and True are different JSON values: a change between them is a change."""
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [ResourceRecord("R[x,k=1]", {"n": 1, "l": [1]})]}))
    store.export(
        env, ExportRequest("full", sets={"a": [ResourceRecord("R[x,k=1]", {"n": True, "l": [1.0]})]})
    )
    assert check_diff(store, env, 1, 2).resources[0].fields == ("l", "n")


def test_an_unknown_version_is_named(db: Database) -> None:
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [rec("r1")]}))
    store.export(env, ExportRequest("full", sets={"a": [rec("r1", v=1)]}))
    store.export(env, ExportRequest("full", sets={"a": [rec("r1", v=2)]}))
    with pytest.raises(UnknownVersion, match="version 9") as raised:
        store.diff(env, 2, 9)
    assert raised.value.details["version"] == 9
    with pytest.raises(UnknownVersion, match="version 7"):
        store.diff(env, 7, 1)
    assert store.collect_garbage(env, keep=2) == 1
    with pytest.raises(UnknownVersion, match="version 1"):
        store.diff(env, 1, 3)
    assert [c.fields for c in check_diff(store, env, 2, 3).resources] == [("v",)]


# -- random histories ---------------------------------------------------------------------------

SET_NAMES = ["a", "b", "c"]
MOVERS = ["m0", "m1", "m2", "m3"]  # placed anywhere (any set, shared, nowhere) by full exports only


def draw_records(data: st.DataObject, ids: list[str]) -> list[ResourceRecord]:
    records = []
    for short in ids:
        others = [i for i in ids if i != short]
        requires = data.draw(st.lists(st.sampled_from(others), max_size=1)) if others else []
        value = data.draw(st.sampled_from([0, 1, 1.0, True, "x", [1], {"k": 1}, None]))
        attributes = data.draw(st.sampled_from([{"v": value}, {"v": value, "w": 1}, {}]))
        records.append(rec(short, requires=tuple(requires), **attributes))
    return records


def own_ids(data: st.DataObject, name: str) -> list[str]:
    return [f"{name}{i}" for i in data.draw(st.sets(st.integers(0, 2), max_size=3))]


def draw_export(data: st.DataObject) -> ExportRequest:
    if data.draw(st.booleans(), label="full"):
        placement = {m: data.draw(st.sampled_from([*SET_NAMES, "shared", None])) for m in MOVERS}
        members = {
            name: own_ids(data, name) + [m for m, where in placement.items() if where == name]
            for name in SET_NAMES
        }
        shared = [m for m, where in placement.items() if where == "shared"]
        return ExportRequest(
            "full",
            sets={name: draw_records(data, ids) for name, ids in members.items() if ids},
            shared=draw_records(data, shared) if shared else [],
        )
    names = data.draw(st.lists(st.sampled_from(SET_NAMES), max_size=2, unique=True))
    deleted = data.draw(st.lists(st.sampled_from([n for n in SET_NAMES if n not in names]), max_size=1))
    return ExportRequest(
        "partial",
        sets={name: draw_records(data, own_ids(data, name)) for name in names},
        deleted_sets=deleted,
    )


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_diff_applied_to_its_first_version_gives_the_second(db: Database, data: st.DataObject) -> None:
    """For every pair of versions of a random history (full exports move resources between sets
    and the shared set; partial ones replace and delete sets): apply(a, diff(a, b)) == b."""
    store = DesiredStateStore(db)
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [rec("a0")]}))
    steps = data.draw(st.integers(1, 5), label="steps")
    for _ in range(steps):
        store.export(env, draw_export(data))
    versions = list(range(1, steps + 2))
    for a in versions:
        for b in versions:
            diff = check_diff(store, env, a, b)
            if a == b:
                assert diff.empty


# -- cost -----------------------------------------------------------------------------------------


def numbered_sets(sets: int, changed: int | None = None) -> ExportRequest:
    return ExportRequest(
        "full",
        sets={f"set-{i:05}": [rec(f"r{i}", v=i if i != changed else -1)] for i in range(sets)},
        shared=[rec("shared")],
    )


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_diff_reads_only_the_changed_sets_through_indexes(db: Database) -> None:
    """Every statement of a diff is an index search (EXPLAIN QUERY PLAN), in an environment
    sharing the database with a larger one, and the diff holds only the changed set."""
    store = DesiredStateStore(db)
    store.export(new_env(db), numbered_sets(500))
    env = new_env(db)
    store.export(env, numbered_sets(300))
    store.export(env, numbered_sets(300, changed=42))
    statements: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append((statement, parameters))

    event.listen(db.read_engine, "before_cursor_execute", capture)
    try:
        diff = store.diff(env, 1, 2)
    finally:
        event.remove(db.read_engine, "before_cursor_execute", capture)
    assert [(s.name, s.change) for s in diff.sets] == [("set-00042", "changed")]
    assert [(c.id, c.fields) for c in diff.resources] == [(rid_of("r42"), ("v",))]
    assert len(statements) >= 4
    with db.read() as session:
        conn = session.connection()
        for statement, parameters in statements:
            plan = [row[-1] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            assert plan and all(step.startswith("SEARCH") for step in plan), (statement, plan)
