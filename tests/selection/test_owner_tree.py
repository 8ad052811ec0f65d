"""OwnerTreeSelector: up to the root, whole tree down, errors naming ids, terminated roots reported."""

from __future__ import annotations

import pytest

from lsm.errors import SelectorError
from lsm.selection import OwnerTreeSelector, ownership_roots, run_selector, tree_members
from lsm.store.database import Database
from tests.selection import CATALOG, Inventory, tree_selection


def _select(inv: Inventory, ids: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    selector = OwnerTreeSelector(inv.view(), CATALOG)
    return run_selector(selector, ids), selector.roots()


def test_a_leaf_selects_its_whole_three_level_tree_and_nothing_of_another(db: Database) -> None:
    inv = Inventory(db)
    tree, other = inv.router_tree("r1", ports=3), inv.router_tree("r2")
    inv.add("site", name="lonely")
    inv.flush()
    selected, roots = _select(inv, [tree["subs"][2]])
    assert selected == tree_selection(tree)
    assert roots == [tree["router"]]
    assert not set(other["ports"]) & set(selected["port"])


@pytest.mark.parametrize("member", ["router", "loopback", "port", "sub"])
def test_any_member_selects_the_same_tree(db: Database, member: str) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    inv.router_tree("other")
    inv.flush()
    request = {
        "router": tree["router"],
        "loopback": tree["loopback"],
        "port": tree["ports"][0],
        "sub": tree["subs"][1],
    }[member]
    selected, roots = _select(inv, [request])
    assert selected == tree_selection(tree)
    assert roots == [tree["router"]]


def test_requests_in_several_trees_select_each_tree_once(db: Database) -> None:
    inv = Inventory(db)
    t1, t2, t3 = inv.router_tree("a"), inv.router_tree("b"), inv.router_tree("c")
    site = inv.add("site", name="standalone")
    inv.flush()
    selected, roots = _select(inv, [t1["subs"][0], t1["ports"][1], t2["loopback"], site])
    assert selected["router"] == sorted([t1["router"], t2["router"]])
    assert selected["site"] == [site]
    assert t3["router"] not in selected["router"]
    assert roots == sorted([t1["router"], t2["router"], site])


def test_an_ownership_cycle_is_an_error_naming_the_ids_in_it(db: Database) -> None:
    inv = Inventory(db)
    a, b = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
    inv.add("port", instance_id=a, owner=b)
    inv.add("port", instance_id=b, owner=a)
    leaf = inv.add("sub_interface", owner=a)
    inv.flush()
    with pytest.raises(SelectorError) as info:
        _select(inv, [leaf])
    assert sorted(info.value.details["cycle"]) == [a, b]
    assert a in str(info.value) and b in str(info.value)
    assert info.value.details["selector"] == "owner_tree"
    assert "Traceback" in info.value.details["traceback"]


def test_a_missing_owner_is_an_error_naming_both_ids(db: Database) -> None:
    inv = Inventory(db)
    ghost = "00000000-0000-0000-0000-0000000000ff"
    port = inv.add("port", owner=ghost)
    sub = inv.add("sub_interface", owner=port)
    inv.flush()
    with pytest.raises(SelectorError) as info:
        _select(inv, [sub])
    assert info.value.details["instance_id"] == port
    assert info.value.details["owner_id"] == ghost
    assert port in info.value.message and ghost in info.value.message


def test_a_terminated_root_is_reported_but_not_selected(db: Database) -> None:
    inv = Inventory(db)
    router = inv.add("router", name="gone", deleted=True)
    port = inv.add("port", owner=router, deleted=True)
    live_tree = inv.router_tree("live")
    inv.flush()
    selected, roots = _select(inv, [port, live_tree["ports"][0]])
    assert roots == sorted([router, live_tree["router"]])
    assert router not in selected["router"] and port not in selected["port"]
    assert selected == tree_selection(live_tree)


def test_a_terminated_child_leads_to_its_live_tree(db: Database) -> None:
    inv = Inventory(db)
    tree = inv.router_tree()
    deleted_port = inv.add("port", owner=tree["router"], deleted=True)
    deleted_sub = inv.add("sub_interface", owner=deleted_port, deleted=True)
    inv.flush()
    selected, roots = _select(inv, [deleted_sub])
    assert selected == tree_selection(tree)
    assert roots == [tree["router"]]


def test_unknown_requested_ids_select_nothing(db: Database) -> None:
    inv = Inventory(db)
    inv.router_tree()
    inv.flush()
    selected, roots = _select(inv, ["00000000-0000-0000-0000-000000000000"])
    assert selected == {name: [] for name in CATALOG.names()}
    assert roots == []


def test_walk_helpers_are_batched_per_level(db: Database) -> None:
    inv = Inventory(db)
    trees = [inv.router_tree(f"r{i}", ports=2) for i in range(20)]
    inv.flush()
    view = inv.view()
    leaves = [sub for t in trees for sub in t["subs"]]
    roots = ownership_roots(view, leaves)
    assert view.queries == 3  # sub-interfaces, ports, routers: one query each
    assert roots == {sub: t["router"] for t in trees for sub in t["subs"]}
    members = tree_members(view, [t["router"] for t in trees])
    assert view.queries == 3 + 3  # three levels of children
    assert len(members) == 20 * (1 + 2 + 2 + 1)
