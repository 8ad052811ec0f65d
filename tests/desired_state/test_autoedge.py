"""Automatic edges (docs/semantics.md §5, ``autoedge``): added when a version is stored, where the
export rules allow them, never over a written edge or ``autoedge=False``, never a cycle (refused,
naming it, nothing written), and a partial export looks up only what it needs."""

from __future__ import annotations

from typing import Any

import pytest

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.errors import ExportRuleViolation, InvalidMetaparameter
from lsm.store.database import Database
from tests.desired_state import new_env, rid_of, snapshot


def res(
    name: str, requires: tuple[str, ...] = (), autoedges: tuple[str, ...] = (), **attributes: Any
) -> ResourceRecord:
    """A record whose one need is met by ``autoedges``, nearest first (``needs=`` for several)."""
    needs = attributes.pop("needs", None) or ((tuple(rid_of(c) for c in autoedges),) if autoedges else ())
    return ResourceRecord(rid_of(name), dict(attributes), tuple(rid_of(r) for r in requires), needs)


@pytest.fixture
def store(db: Database) -> DesiredStateStore:
    return DesiredStateStore(db)


def stored(store: DesiredStateStore, env: str, version: int) -> dict[str, ResourceRecord]:
    return {record.id: record for _, record in store.resources(env, version)}


def test_a_resource_requires_its_nearest_provider_in_its_set_and_the_edge_is_marked(
    db: Database, store: DesiredStateStore
) -> None:
    env = new_env(db)
    # f may depend on d1 (nearest) then d0; both are in the set: only the nearest is taken
    store.export(
        env, ExportRequest("full", sets={"a": [res("f", autoedges=("d1", "d0")), res("d1"), res("d0")]})
    )
    f = stored(store, env, 1)[rid_of("f")]
    assert f.requires == (rid_of("d1"),)
    assert f.attributes["auto_requires"] == [rid_of("d1")]


def test_each_need_gets_its_own_edge(db: Database, store: DesiredStateStore) -> None:
    env = new_env(db)
    needs = ((rid_of("n1"),), (rid_of("missing"), rid_of("n2")))
    store.export(env, ExportRequest("full", sets={"a": [res("veth", needs=needs), res("n1"), res("n2")]}))
    veth = stored(store, env, 1)[rid_of("veth")]
    assert veth.requires == (rid_of("n1"), rid_of("n2")) == tuple(veth.attributes["auto_requires"])


def test_an_edge_the_model_wrote_either_way_or_autoedge_false_adds_nothing(
    db: Database, store: DesiredStateStore
) -> None:
    env = new_env(db)
    sets = {
        "a": [
            res("f", requires=("d",), autoedges=("d",)),  # written already
            res("g", autoedges=("e",)),
            res("e", requires=("g",)),  # the model says e requires g: no edge back
            res("h", autoedges=("d",), meta={"autoedge": False}),
            res("d"),
        ]
    }
    store.export(env, ExportRequest("full", sets=sets))
    found = stored(store, env, 1)
    assert (
        found[rid_of("f")].requires == (rid_of("d"),) and "auto_requires" not in found[rid_of("f")].attributes
    )
    assert found[rid_of("g")].requires == ()
    assert found[rid_of("h")].requires == ()


def test_no_automatic_edge_crosses_named_sets_or_leads_from_shared_into_a_set(
    db: Database, store: DesiredStateStore
) -> None:
    env = new_env(db)
    store.export(
        env,
        ExportRequest(
            "full",
            sets={"a": [res("f", autoedges=("d",))], "b": [res("d")]},
            shared=[res("s", autoedges=("d",))],
        ),
    )
    found = stored(store, env, 1)
    assert found[rid_of("f")].requires == () and found[rid_of("s")].requires == ()


def test_a_partial_export_finds_a_stored_shared_provider_by_key(
    db: Database, store: DesiredStateStore
) -> None:
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [res("x")]}, shared=[res("dir")]))
    store.export(env, ExportRequest("partial", sets={"b": [res("f", autoedges=("missing", "dir"))]}))
    assert stored(store, env, 2)[rid_of("f")].requires == (rid_of("dir"),)


def test_a_shared_resource_already_stored_keeps_its_automatic_edges_in_a_partial_export(
    db: Database, store: DesiredStateStore
) -> None:
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [res("x")]}, shared=[res("s", autoedges=("d",))]))
    store.export(env, ExportRequest("partial", sets={}, shared=[res("d")]))
    # s carried again: a provider appeared meanwhile, but s is the same resource (rule 4 holds)
    store.export(env, ExportRequest("partial", sets={"b": [res("y")]}, shared=[res("s", autoedges=("d",))]))
    assert stored(store, env, 3)[rid_of("s")].requires == ()


def test_a_cycle_made_by_automatic_edges_is_refused_naming_it_and_nothing_is_written(
    db: Database, store: DesiredStateStore
) -> None:
    env = new_env(db)
    store.export(env, ExportRequest("full", sets={"a": [res("x")]}))
    before = snapshot(db)
    request = ExportRequest(
        "partial",
        sets={"b": [res("p", autoedges=("q",)), res("q", requires=("r",)), res("r", autoedges=("p",))]},
    )
    with pytest.raises(ExportRuleViolation) as info:
        store.export(env, request)
    cycle = info.value.details["cycle"]
    assert cycle[0] == cycle[-1] and set(cycle) == {rid_of("p"), rid_of("q"), rid_of("r")}
    assert "cycle" in info.value.message and rid_of("p") in info.value.message
    assert info.value.details["rule"] == 6
    assert snapshot(db) == before and store.latest_version(env) == 1


def test_a_cycle_through_a_stored_shared_resource_is_found(db: Database, store: DesiredStateStore) -> None:
    env = new_env(db)
    # stored shared s requires v of set b; b's new t auto-requires s and v requires t: t -> s -> v -> t
    store.export(env, ExportRequest("full", sets={"b": [res("v")]}, shared=[res("s", requires=("v",))]))
    with pytest.raises(ExportRuleViolation) as info:
        store.export(
            env,
            ExportRequest("partial", sets={"b": [res("t", autoedges=("u", "s")), res("v", requires=("t",))]}),
        )
    assert info.value.details["cycle"] == [rid_of("t"), rid_of("s"), rid_of("v"), rid_of("t")]


@pytest.mark.parametrize("value", ["no", 1, None])
def test_an_autoedge_or_autogroup_flag_of_the_wrong_type_is_refused_naming_the_field(
    db: Database, store: DesiredStateStore, value: Any
) -> None:
    env = new_env(db)
    for field in ("autoedge", "autogroup"):
        with pytest.raises(InvalidMetaparameter) as info:
            store.export(env, ExportRequest("full", sets={"a": [res("x", meta={field: value})]}))
        assert info.value.details == {"resource": rid_of("x"), "field": f"meta.{field}"}
    assert store.latest_version(env) is None
