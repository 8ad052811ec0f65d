"""Incremental full exports: sets as in a partial export, the shared set replaced where named.

And the model fingerprint a version carries. Cost is shown in rows, never in seconds.
"""

from __future__ import annotations

from typing import Any

import pytest

from lsm.desired_state import DesiredStateStore, ExportRequest
from lsm.errors import InvalidInput
from lsm.store.database import Database
from tests.desired_state import WriteCounter, new_env, rec, rid_of
from tests.desired_state.test_copy_on_write import base_export
from tests.desired_state.test_rules import rejected

X, Y, Z, S, T = rid_of("x"), rid_of("y"), rid_of("z"), rid_of("s"), rid_of("t")


@pytest.fixture
def store(db: Database) -> DesiredStateStore:
    return DesiredStateStore(db)


@pytest.fixture
def env(db: Database, store: DesiredStateStore) -> str:
    """Version 1: a = {x}, b = {y requires s}, c = {z}; shared = {s, t}; fingerprint "m1"."""
    env_id = new_env(db)
    store.export(
        env_id,
        ExportRequest(
            "full",
            sets={"a": [rec("x")], "b": [rec("y", requires=("s",))], "c": [rec("z")]},
            shared=[rec("s", v=1), rec("t", v=1)],
            model_fingerprint="m1",
        ),
    )
    return env_id


def incremental(**fields: Any) -> ExportRequest:
    return ExportRequest("full", incremental=True, model_fingerprint="m1", **fields)


def test_unnamed_sets_stay_named_ones_are_replaced_or_deleted(store: DesiredStateStore, env: str) -> None:
    info = store.export(env, incremental(sets={"a": [rec("x", v=2)]}, deleted_sets=["c"]))
    assert (info.kind, info.sets_replaced, info.sets_deleted) == ("full", ["a"], ["c"])
    assert store.content(env, 2).sets == {"a": [X], "b": [Y]}
    assert store.set_revisions(env, 2)["b"] == 1  # untouched: the same revision
    assert store.content(env, 2).shared == [S, T]


def test_shared_resources_are_replaced_where_named_and_retired_by_id(
    store: DesiredStateStore, env: str
) -> None:
    store.export(env, incremental(shared=[rec("t", v=2), rec("u")], retired_shared=[]))
    shared = {r.id: r for name, r in store.resources(env, 2) if name is None}
    assert shared[T].attributes == {"v": 2} and set(shared) == {S, T, rid_of("u")}
    store.export(env, incremental(retired_shared=[T]))
    assert store.content(env, 3).shared == [S, rid_of("u")]


def test_a_retired_shared_resource_may_move_into_a_replaced_set(store: DesiredStateStore, env: str) -> None:
    store.export(env, incremental(sets={"a": [rec("x"), rec("t")]}, retired_shared=[T]))
    assert store.content(env, 2).sets["a"] == sorted([X, T])
    assert store.content(env, 2).shared == [S]


def test_a_resource_of_a_kept_set_can_not_be_exported_elsewhere(
    db: Database, store: DesiredStateStore, env: str
) -> None:
    error = rejected(db, store, env, incremental(sets={"a": [rec("x"), rec("z")]}))
    assert error.details["rule"] == 1 and error.details["sets"] == ["a", "c"]


def test_a_kept_shared_resource_can_not_lose_what_it_requires(db: Database, store: DesiredStateStore) -> None:
    env = new_env(db)
    store.export(
        env,
        ExportRequest(
            "full", sets={"a": [rec("x")]}, shared=[rec("s", requires=("x",))], model_fingerprint="m"
        ),
    )
    error = rejected(db, store, env, incremental(sets={"a": [rec("y")]}))
    assert error.details["rule"] == 6 and error.details["resources"] == [S, X]
    assert "kept from the previous version" in error.message


def test_an_incremental_export_needs_a_base(db: Database, store: DesiredStateStore) -> None:
    error = rejected(db, store, new_env(db), incremental(sets={"a": [rec("x")]}))
    assert error.details["rule"] == 7


def test_only_a_full_export_is_incremental_and_only_it_retires_by_name() -> None:
    with pytest.raises(InvalidInput):
        ExportRequest("partial", incremental=True)
    with pytest.raises(InvalidInput):
        ExportRequest("full", retired_shared=[S])


def test_a_partial_export_keeps_the_fingerprint_only_when_it_is_the_same(
    store: DesiredStateStore, env: str
) -> None:
    assert store.get_version(env, 1).model_fingerprint == "m1"
    store.export(env, ExportRequest("partial", sets={"a": [rec("x", v=3)]}, model_fingerprint="m1"))
    assert store.get_version(env, 2).model_fingerprint == "m1"
    store.export(env, ExportRequest("partial", sets={"a": [rec("x", v=4)]}, model_fingerprint="m2"))
    assert store.get_version(env, 3).model_fingerprint is None
    store.export(env, ExportRequest("partial", sets={"a": [rec("x", v=5)]}, model_fingerprint="m2"))
    assert store.get_version(env, 4).model_fingerprint is None  # still refined with two models
    store.export(env, ExportRequest("full", sets={"a": [rec("x")]}, model_fingerprint="m2"))
    assert store.latest_fingerprint(env) == (5, "m2")


def test_an_incremental_export_writes_the_same_rows_on_100_and_10000_sets(
    db: Database, store: DesiredStateStore
) -> None:
    written: list[int] = []
    for size in (100, 10_000):
        env = new_env(db)
        store.export(env, base_export(size))
        with WriteCounter(db).counting() as counter:
            store.export(
                env,
                ExportRequest(
                    "full",
                    incremental=True,
                    sets={"set-00042": [rec("r42", requires=("shared",), i=-1)]},
                    shared=[rec("extra")],
                ),
            )
        written.append(counter.rows)
    # close 1 revision + 1 resource, insert 1 revision + 1 resource + 1 shared, version + head
    assert written == [7, 7]


def test_a_version_counts_its_sets_without_counting_them(store: DesiredStateStore, env: str) -> None:
    assert store.get_version(env, 1).set_count == 3
    store.export(env, incremental(sets={"d": [rec("w")], "a": [rec("x", v=9)]}, deleted_sets=["b", "c"]))
    store.export(env, ExportRequest("partial", sets={"e": [rec("v")]}, deleted_sets=["zz"]))
    counts = [store.get_version(env, n).set_count for n in (2, 3)]
    assert counts == [2, 3] == [len(store.content(env, n).sets) for n in (2, 3)]
