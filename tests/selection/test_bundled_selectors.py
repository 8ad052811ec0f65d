"""Bundled selectors (lsm_selectors): relation closure, entity, state and attribute filters."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from lsm_selectors.filters import AttributeSelector, EntitySelector, StateSelector
from lsm_selectors.relation_closure import RelationClosureSelector

from lsm.errors import InvalidInput, SelectorError, UnknownEntity
from lsm.selection import OwnerTreeSelector, build_selector, run_selector
from lsm.store.database import Database
from lsm.store.tables import InstanceRow
from tests.selection import CATALOG, Inventory, tree_selection


def _union(*selections: dict[str, list[str]]) -> dict[str, list[str]]:
    return {name: sorted({i for s in selections for i in s[name]}) for name in CATALOG.names()}


@pytest.fixture
def tunnel_net(db: Database) -> dict[str, Any]:
    """r1 and r2 joined by a tunnel between one port of each; r3 stands apart."""
    inv = Inventory(db)
    r1, r2, r3 = inv.router_tree("r1", ports=3), inv.router_tree("r2"), inv.router_tree("r3")
    tunnel = inv.add("tunnel", refs={"a": r1["ports"][0], "b": r2["ports"][1]})
    inv.flush()
    return {"inv": inv, "r1": r1, "r2": r2, "r3": r3, "tunnel": tunnel}


def _with_tunnel(selection: dict[str, list[str]], tunnel: str) -> dict[str, list[str]]:
    return {**selection, "tunnel": [tunnel]}


def test_a_tunnel_pulls_both_routers_and_all_their_ports(tunnel_net: dict[str, Any]) -> None:
    inv, tunnel = tunnel_net["inv"], tunnel_net["tunnel"]
    selector = RelationClosureSelector(inv.view(), CATALOG)
    result = run_selector(selector, [tunnel])
    expected = _with_tunnel(
        _union(tree_selection(tunnel_net["r1"]), tree_selection(tunnel_net["r2"])), tunnel
    )
    assert result == expected
    assert tunnel_net["r3"]["router"] not in result["router"]
    assert selector.roots() == sorted([tunnel_net["r1"]["router"], tunnel_net["r2"]["router"], tunnel])


def test_any_member_reaches_the_other_router_through_the_tunnel(tunnel_net: dict[str, Any]) -> None:
    inv = tunnel_net["inv"]
    result = run_selector(RelationClosureSelector(inv.view(), CATALOG), [tunnel_net["r2"]["subs"][0]])
    assert result["router"] == sorted([tunnel_net["r1"]["router"], tunnel_net["r2"]["router"]])
    assert result["tunnel"] == [tunnel_net["tunnel"]]
    assert result["sub_interface"] == sorted([*tunnel_net["r1"]["subs"], *tunnel_net["r2"]["subs"]])


def test_an_unrelated_router_pulls_only_its_tree(tunnel_net: dict[str, Any]) -> None:
    inv, r3 = tunnel_net["inv"], tunnel_net["r3"]
    assert run_selector(RelationClosureSelector(inv.view(), CATALOG), [r3["router"]]) == tree_selection(r3)


def test_a_deleted_tunnel_that_was_requested_still_pulls_both_routers(db: Database) -> None:
    inv = Inventory(db)
    r1, r2 = inv.router_tree("r1"), inv.router_tree("r2")
    tunnel = inv.add("tunnel", deleted=True, refs={"a": r1["ports"][0], "b": r2["ports"][0]})
    inv.flush()
    selector = RelationClosureSelector(inv.view(), CATALOG)
    result = run_selector(selector, [tunnel])
    assert result == _union(tree_selection(r1), tree_selection(r2))
    assert tunnel in selector.roots()  # its set must be deleted


def test_a_deleted_tunnel_met_on_the_way_is_a_dead_end(db: Database) -> None:
    inv = Inventory(db)
    r1, r2 = inv.router_tree("r1"), inv.router_tree("r2")
    inv.add("tunnel", deleted=True, refs={"a": r1["ports"][0], "b": r2["ports"][0]})
    inv.flush()
    assert run_selector(RelationClosureSelector(inv.view(), CATALOG), [r1["router"]]) == tree_selection(r1)


def test_a_chain_of_tunnels_is_followed_to_the_fixed_point(db: Database) -> None:
    inv = Inventory(db)
    routers = [inv.router_tree(f"r{i}") for i in range(4)]
    for left, right in itertools.pairwise(routers):
        inv.add("tunnel", refs={"a": left["ports"][1], "b": right["ports"][0]})
    inv.flush()
    result = run_selector(RelationClosureSelector(inv.view(), CATALOG), [routers[0]["loopback"]])
    assert result["router"] == sorted(r["router"] for r in routers)
    assert len(result["tunnel"]) == 3


def test_entity_selector_selects_whole_trees_of_every_instance(db: Database) -> None:
    inv = Inventory(db)
    t1, t2 = inv.router_tree("a"), inv.router_tree("b")
    inv.add("router", name="gone", deleted=True)
    site = inv.add("site", name="s")
    inv.flush()
    selector = EntitySelector(inv.view(), CATALOG, entities=["loopback"])
    expected = _union(tree_selection(t1), tree_selection(t2))
    assert run_selector(selector, []) == expected
    assert selector.roots() == sorted([t1["router"], t2["router"]])
    # a requested tree is always compiled, whatever the selector says (completeness)
    assert run_selector(selector, [site]) == {**expected, "site": [site]}
    assert selector.roots() == sorted([t1["router"], t2["router"], site])
    with pytest.raises(UnknownEntity):
        EntitySelector(inv.view(), CATALOG, entities="no_such_entity")


def test_state_selector_selects_trees_of_instances_in_the_states(db: Database) -> None:
    inv = Inventory(db)
    t1, t2 = inv.router_tree("a"), inv.router_tree("b")
    failed_port = inv.add("port", owner=t2["router"], state="failed")
    failed_site = inv.add("site", name="s", state="failed")
    inv.add("site", name="gone", state="failed", deleted=True)
    inv.flush()
    result = run_selector(StateSelector(inv.view(), CATALOG, states=["failed"]), [])
    expected = tree_selection(t2)
    expected["port"] = sorted([*expected["port"], failed_port])
    expected["site"] = [failed_site]
    assert result == expected
    assert t1["router"] not in result["router"]
    only_sites = run_selector(StateSelector(inv.view(), CATALOG, states="failed", entities=["site"]), [])
    assert only_sites["site"] == [failed_site] and only_sites["router"] == []


def test_attribute_selector_matches_the_value_in_the_compiles_set(db: Database) -> None:
    inv = Inventory(db)
    t1, t2 = inv.router_tree("a"), inv.router_tree("b")  # ports have vlan 10 and 11
    other = inv.router_tree("c")
    inv.flush()
    with db.write() as session:  # move tree c's ports off vlan 11
        for port in other["ports"]:
            row = session.get(InstanceRow, port)
            assert row is not None
            row.active_attributes = {**(row.active_attributes or {}), "vlan": 99}
    view = inv.view()
    result = run_selector(AttributeSelector(view, CATALOG, entity="port", attribute="vlan", value=11), [])
    assert result == _union(tree_selection(t1), tree_selection(t2))
    none = run_selector(AttributeSelector(view, CATALOG, entity="port", attribute="vlan", value="11"), [])
    assert none == {name: [] for name in CATALOG.names()}
    with pytest.raises(InvalidInput):
        AttributeSelector(view, CATALOG, entity="port", attribute="colour", value=1)


def test_filters_combine_with_the_owner_tree_for_the_requested_ids(db: Database) -> None:
    inv = Inventory(db)
    t1, t2 = inv.router_tree("a"), inv.router_tree("b")
    site = inv.add("site", name="s")
    inv.flush()
    view = inv.view()
    selector = EntitySelector(view, CATALOG, entities=["site"]) | OwnerTreeSelector(view, CATALOG)
    result = run_selector(selector, [t1["ports"][0]])
    assert result == {**tree_selection(t1), "site": [site]}
    assert t2["router"] not in result["router"]
    assert selector.roots() == sorted([t1["router"], site])


def test_bundled_selectors_are_built_by_name_with_parameters(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.flush()
    view = inv.view()
    selector = build_selector("entity", view, CATALOG, entities=["router"])
    assert isinstance(selector, EntitySelector)
    assert run_selector(selector, []) == tree_selection(tree)
    with pytest.raises(SelectorError) as info:
        build_selector("entity", view, CATALOG)  # the entities parameter is required
    assert info.value.details["selector"] == "entity"
    assert "TypeError" in info.value.details["traceback"]


def test_a_filters_picks_are_explained_as_custom_even_when_a_relation_reaches_them(
    tunnel_net: dict[str, Any],
) -> None:
    from lsm.selection import select
    from lsm.selection.diagnostics import explain_selection

    inv, tunnel, r1 = tunnel_net["inv"], tunnel_net["tunnel"], tunnel_net["r1"]
    view = inv.view()
    requested = r1["ports"][0]  # the tunnel refers to it: a relation reaches the tunnel from here
    filtered = select(EntitySelector(view, CATALOG, entities=["tunnel"]), [requested])
    added = explain_selection(view, filtered, "entity")["added"][requested]
    assert added[tunnel] == "custom"
    assert {reason for i, reason in added.items() if i != tunnel} <= {"owner_tree", "custom"}
    followed = select(RelationClosureSelector(view, CATALOG), [requested])
    assert explain_selection(view, followed, "relation_closure")["added"][requested][tunnel] == "relation"
    union = select(
        EntitySelector(view, CATALOG, entities=["tunnel"]) | RelationClosureSelector(view, CATALOG),
        [requested],
    )
    assert explain_selection(view, union, "union")["added"][requested][tunnel] == "relation"
