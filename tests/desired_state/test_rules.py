"""The export rules of docs/semantics.md §4: one test per rule and case, with the exact message
and details, and proof that a rejected export wrote nothing (every desired-state row is the
same before and after, and the latest version did not move)."""

from __future__ import annotations

from typing import Any

import pytest

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.errors import ExportRuleViolation, InvalidInput
from lsm.store.database import Database
from tests.desired_state import new_env, rec, rid_of, snapshot

X, Y, Z, S = rid_of("x"), rid_of("y"), rid_of("z"), rid_of("s")


@pytest.fixture
def store(db: Database) -> DesiredStateStore:
    return DesiredStateStore(db)


@pytest.fixture
def env(db: Database, store: DesiredStateStore) -> str:
    """An environment at version 1: sets a = {x}, b = {y}, shared = {s}."""
    env_id = new_env(db)
    store.export(
        env_id, ExportRequest("full", sets={"a": [rec("x")], "b": [rec("y")]}, shared=[rec("s", v=1)])
    )
    return env_id


def rejected(db: Database, store: DesiredStateStore, env: str, request: ExportRequest) -> ExportRuleViolation:
    """Export ``request``, expect a rule violation, and check that nothing changed."""
    latest, before = store.latest_version(env), snapshot(db)
    with pytest.raises(ExportRuleViolation) as info:
        store.export(env, request)
    assert snapshot(db) == before
    assert store.latest_version(env) == latest
    assert info.value.status == 400 and info.value.kind == "export_rule_violation"
    return info.value


def partial(
    sets: dict[str, list[ResourceRecord]] | None = None,
    shared: list[ResourceRecord] | None = None,
    **kw: Any,
) -> ExportRequest:
    return ExportRequest("partial", sets=sets or {}, shared=shared or [], **kw)


# -- rule 1: a resource is in at most one set ------------------------------------------------------
def test_rule1_one_resource_in_two_exported_sets(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"c": [rec("z")], "d": [rec("z")]}))
    assert error.message == f"resource {Z} can not be part of multiple resource sets: c and d"
    assert error.details == {"rule": 1, "resources": [Z], "sets": ["c", "d"]}


def test_rule1_one_resource_in_a_set_and_the_shared_set(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    error = rejected(db, store, env, partial({"c": [rec("z")]}, [rec("z")]))
    assert error.message == f"resource {Z} can not be part of multiple resource sets: c and shared"
    assert error.details == {"rule": 1, "resources": [Z], "sets": ["c", "shared"]}


def test_rule1_a_resource_of_a_kept_stored_set(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"c": [rec("x")]}))
    assert error.message == f"resource {X} can not be part of multiple resource sets: a and c"
    assert error.details == {"rule": 1, "resources": [X], "sets": ["a", "c"]}


def test_rule1_a_stored_shared_resource_in_a_set(db: Database, store: DesiredStateStore, env: str) -> None:
    # a partial export never removes a shared resource, so s would be in c and in shared
    error = rejected(db, store, env, partial({"c": [rec("s", v=1)]}))
    assert error.message == f"resource {S} can not be part of multiple resource sets: c and shared"
    assert error.details == {"rule": 1, "resources": [S], "sets": ["c", "shared"]}


def test_rule1_holds_for_full_exports(db: Database, store: DesiredStateStore, env: str) -> None:
    request = ExportRequest("full", sets={"a": [rec("x")], "b": [rec("x"), rec("y")]})
    error = rejected(db, store, env, request)
    assert error.message == f"resource {X} can not be part of multiple resource sets: a and b"


def test_rule1_lists_every_violation(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"c": [rec("x"), rec("y")]}))
    assert error.message == (
        f"resource {X} can not be part of multiple resource sets: a and c; "
        f"resource {Y} can not be part of multiple resource sets: b and c"
    )
    assert error.details == {"rule": 1, "resources": [X, Y], "sets": ["a", "b", "c"]}


def test_a_resource_listed_twice_in_one_set_is_invalid_input(store: DesiredStateStore, env: str) -> None:
    with pytest.raises(InvalidInput) as info:
        store.export(env, partial({"c": [rec("z"), rec("z", v=2)]}))
    assert info.value.message == f"resource {Z} is listed more than once in c"


@pytest.mark.parametrize("name", ["", "shared"])
def test_reserved_set_names_are_invalid_input(store: DesiredStateStore, env: str, name: str) -> None:
    with pytest.raises(InvalidInput):
        store.export(env, partial({name: [rec("z")]}))


# -- rule 3: a set both exported and deleted ------------------------------------------------------
def test_rule3_a_set_exported_and_deleted(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"a": [rec("x", v=2)]}, deleted_sets=["a", "b"]))
    assert error.message == "resource set a can not be both exported and deleted"
    assert error.details == {"rule": 3, "resources": [], "sets": ["a"]}


def test_rule3_soft_delete_drops_the_deletion(store: DesiredStateStore, env: str) -> None:
    info = store.export(env, partial({"a": [rec("x", v=2)]}, deleted_sets=["a"], soft_delete=True))
    assert info.sets_replaced == ["a"] and info.sets_deleted == []
    assert store.resources(env, 2, "a") == [("a", rec("x", v=2))]


def test_rule3_an_empty_exported_set_may_also_be_deleted(store: DesiredStateStore, env: str) -> None:
    assert store.export(env, partial({"a": []}, deleted_sets=["a"])).sets_deleted == ["a"]


# -- rule 4: shared resources are added, never changed ---------------------------------------------
def test_rule4_a_changed_shared_resource(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial(shared=[rec("s", v=2)]))
    assert error.message == (
        f"shared resource {S} differs from the stored one: a partial export can not change shared resources"
    )
    assert error.details == {"rule": 4, "resources": [S], "sets": ["shared"]}


def test_rule4_changed_requires_count_as_a_change(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial(shared=[rec("s", requires=("x",), v=1)]))
    assert error.details["rule"] == 4


def test_rule4_an_identical_shared_resource_is_accepted(store: DesiredStateStore, env: str) -> None:
    info = store.export(env, partial(shared=[rec("s", v=1)]))
    assert info.resource_count == 3 and store.content(env, 2).shared == [S]


# -- rule 5: no move unless both sets are replaced or deleted --------------------------------------
def test_rule5_a_resource_moving_into_the_shared_set(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    error = rejected(db, store, env, partial({"a": [rec("z")]}, [rec("x")]))
    assert error.message == (
        f"resource {X} can not move from a to shared unless both resource sets are replaced or deleted "
        "in the same export"
    )
    assert error.details == {"rule": 5, "resources": [X], "sets": ["a", "shared"]}


def test_rule5_also_out_of_a_deleted_set(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial(shared=[rec("x")], deleted_sets=["a"]))
    assert error.details == {"rule": 5, "resources": [X], "sets": ["a", "shared"]}


def test_rule5_a_move_between_replaced_sets_is_allowed(store: DesiredStateStore, env: str) -> None:
    store.export(env, partial({"a": [rec("z")], "b": [rec("y"), rec("x")]}))
    assert store.content(env, 2).sets == {"a": [Z], "b": [X, Y]}


def test_rule5_a_full_export_may_move_anything(store: DesiredStateStore, env: str) -> None:
    store.export(env, ExportRequest("full", sets={"a": [rec("s")]}, shared=[rec("x")]))
    assert store.content(env, 2).sets == {"a": [S]} and store.content(env, 2).shared == [X]


# -- rule 6: requires stay inside a set or point to shared resources -------------------------------
def test_rule6_requiring_another_exported_set(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"c": [rec("z", requires=("w",))], "d": [rec("w")]}))
    w = rid_of("w")
    assert error.message == f"resource {Z} in resource set c can not require {w} in resource set d"
    assert error.details == {"rule": 6, "resources": sorted([Z, w]), "sets": ["c", "d"]}


def test_rule6_requiring_a_stored_set(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"c": [rec("z", requires=("x",))]}))
    assert error.message == f"resource {Z} in resource set c can not require {X} in resource set a"
    assert error.details == {"rule": 6, "resources": [X, Z], "sets": ["a", "c"]}


def test_rule6_requiring_an_unknown_resource(db: Database, store: DesiredStateStore, env: str) -> None:
    error = rejected(db, store, env, partial({"c": [rec("z", requires=("nowhere",))]}))
    nowhere = rid_of("nowhere")
    assert (
        error.message
        == f"resource {Z} in c requires {nowhere}, which is neither in the export nor a shared resource"
    )
    assert error.details == {"rule": 6, "resources": sorted([Z, nowhere]), "sets": ["c"]}


def test_rule6_requiring_a_resource_its_own_replacement_drops(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    error = rejected(db, store, env, partial({"a": [rec("z", requires=("x",))]}))
    assert (
        error.message
        == f"resource {Z} in a requires {X}, which is neither in the export nor a shared resource"
    )


def test_rule6_in_a_full_export_everything_must_be_in_the_export(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    error = rejected(db, store, env, ExportRequest("full", sets={"a": [rec("x", requires=("s",))]}))
    assert error.message == f"resource {X} in a requires {S}, which is not in the export"
    assert error.details == {"rule": 6, "resources": [S, X], "sets": ["a"]}


def test_rule6_shared_resources_may_require_anything_that_remains(store: DesiredStateStore, env: str) -> None:
    store.export(env, partial({"c": [rec("z", requires=("s", "t"))]}, [rec("t", requires=("x", "z"))]))
    assert store.content(env, 2).shared == [S, rid_of("t")]


def test_rule6_a_shared_resource_may_not_require_what_the_export_removes(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    error = rejected(db, store, env, partial(shared=[rec("t", requires=("x",))], deleted_sets=["a"]))
    assert error.message == (
        f"resource {rid_of('t')} in shared requires {X}, which is neither in the export nor kept "
        "from the previous version"
    )


@pytest.fixture
def env_with_shared_edge(db: Database, store: DesiredStateStore) -> str:
    """Version 1: sets a = {x}, b = {y}; shared = {s -> x} (a stored shared resource requiring x)."""
    env_id = new_env(db)
    store.export(
        env_id,
        ExportRequest("full", sets={"a": [rec("x")], "b": [rec("y")]}, shared=[rec("s", requires=("x",))]),
    )
    return env_id


def test_rule6_a_partial_may_not_delete_a_set_a_stored_shared_resource_requires(
    db: Database, store: DesiredStateStore, env_with_shared_edge: str
) -> None:
    error = rejected(db, store, env_with_shared_edge, partial(deleted_sets=["a"]))
    assert error.message == (
        f"stored shared resource {S} requires {X}, which this export removes from resource set a"
    )
    assert error.details == {"rule": 6, "resources": [S, X], "sets": ["a", "shared"]}


def test_rule6_a_partial_may_not_replace_a_set_without_what_a_stored_shared_resource_requires(
    db: Database, store: DesiredStateStore, env_with_shared_edge: str
) -> None:
    error = rejected(db, store, env_with_shared_edge, partial({"a": [rec("z")]}))
    assert error.details == {"rule": 6, "resources": [S, X], "sets": ["a", "shared"]}
    # an empty export of the set deletes it: the same edge would dangle
    error = rejected(db, store, env_with_shared_edge, partial({"a": []}))
    assert error.details["resources"] == [S, X]


def test_rule6_a_required_resource_may_change_or_move_between_replaced_sets(
    store: DesiredStateStore, env_with_shared_edge: str
) -> None:
    env = env_with_shared_edge
    store.export(env, partial({"a": [rec("x", v=2)]}))
    store.export(env, partial({"a": [rec("z")], "c": [rec("x")]}))
    store.export(env, partial(deleted_sets=["b"]))  # b holds nothing s requires
    assert store.content(env, 4).sets == {"a": [rid_of("z")], "c": [X]}


def test_a_full_export_drops_the_edge_with_the_shared_resource(
    store: DesiredStateStore, env_with_shared_edge: str
) -> None:
    env = env_with_shared_edge
    store.export(env, ExportRequest("full", sets={"a": [rec("x")], "b": [rec("y")]}))  # s is gone
    store.export(env, partial(deleted_sets=["a"]))  # nothing requires x any more
    assert store.content(env, 3).sets == {"b": [rid_of("y")]}
    store.export(env, ExportRequest("full", sets={"b": [rec("y")]}, shared=[rec("s", requires=("y",))]))
    with pytest.raises(ExportRuleViolation):
        store.export(env, partial(deleted_sets=["b"]))


# -- rule 7: the first version comes from a full export --------------------------------------------
def test_rule7_the_first_version_must_be_full(db: Database, store: DesiredStateStore) -> None:
    env_id = new_env(db)
    error = rejected(db, store, env_id, partial({"a": [rec("x")]}))
    assert (
        error.message
        == f"the first desired-state version of environment {env_id} must come from a full export"
    )
    assert error.details == {"rule": 7, "resources": [], "sets": []}
    assert store.export(env_id, ExportRequest("full", sets={"a": [rec("x")]})).number == 1


def test_a_rejected_first_full_export_leaves_no_head(db: Database, store: DesiredStateStore) -> None:
    env_id = new_env(db)
    request = ExportRequest("full", sets={"a": [rec("x")], "b": [rec("x")]})
    assert rejected(db, store, env_id, request).details["rule"] == 1
    assert store.latest_version(env_id) is None


def test_the_lowest_broken_rule_is_reported(db: Database, store: DesiredStateStore, env: str) -> None:
    request = partial({"c": [rec("x", requires=("nowhere",))]}, [rec("s", v=2)])  # rules 1, 4 and 6
    assert rejected(db, store, env, request).details["rule"] == 1
