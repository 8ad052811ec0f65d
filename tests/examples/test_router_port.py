"""examples/router_port: a router and its ports form one tree and one resource set."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsm.errors import ModelError
from lsm.model import Model, Resource, ResourceData, load_model, refine, validate
from tests.model import inst, uid

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "router_port"


def model() -> Model:
    return load_model(EXAMPLE)


def router(n: int, name: str = "r") -> dict[str, Any]:
    return inst(n, {"mgmt_ip": f"10.0.0.{n}", "name": f"{name}{n}"})


def port(n: int, router_n: int, name: str, mtu: int = 1500, vlan: int | None = None) -> dict[str, Any]:
    return inst(n, {"name": name, "router": uid(router_n), "mtu": mtu, "vlan": vlan})


def example_line(snippet: str) -> str:
    """``examples/router_port/__init__.py:<n>`` of the ``raise`` statement whose text holds ``snippet``."""
    lines = (EXAMPLE / "__init__.py").read_text().splitlines()
    n = next(n for n, text in enumerate(lines) if snippet in text)
    while not lines[n].strip().startswith("raise"):
        n -= 1
    return f"examples/router_port/__init__.py:{n + 1}"


def content(resources: list[Resource]) -> list[ResourceData]:
    return sorted((r.to_data() for r in resources), key=lambda d: d.id)


def test_the_example_declares_the_owner_relation() -> None:
    catalog = model().catalog
    assert catalog.get("port").owner is catalog.get("router")
    assert catalog.get("port").relation_to_owner == "router"
    assert catalog.get("router").lifecycle == "simple_with_delete_validate"


def test_a_router_with_two_ports_is_one_set_of_three_owned_resources_plus_a_shared_agent_config() -> None:
    ports = [port(11, 1, "eth0"), port(12, 1, "eth1", vlan=10)]
    result = refine(model(), {"router": [router(1)], "port": ports})
    assert list(result.sets) == [uid(1)]
    assert sorted(r.id for r in result.sets[uid(1)]) == [
        "net::Interface[10.0.0.1,name=eth0]",
        "net::Interface[10.0.0.1,name=eth1]",
        "net::Router[10.0.0.1,name=r1]",
    ]
    assert [r.id for r in result.shared] == ["net::AgentConfig[internal,name=10.0.0.1]"]
    eth1 = next(r for r in result.sets[uid(1)] if r.id.endswith("eth1]"))
    assert eth1.requires_ids == ("net::Router[10.0.0.1,name=r1]",)
    assert eth1.attributes() == {
        "agent": "10.0.0.1",
        "purged": False,
        "name": "eth1",
        "mtu": 1500,
        "vlan": 10,
    }
    assert result.owner_of["net::Interface[10.0.0.1,name=eth1]"] == uid(12)
    assert result.tree_of == {uid(1): uid(1), uid(11): uid(1), uid(12): uid(1)}


def test_a_duplicate_port_name_on_one_router_fails_naming_the_port() -> None:
    instances = {"router": [router(1), router(2)], "port": [port(11, 1, "eth0"), port(12, 1, "eth0")]}
    instances["port"].append(port(21, 2, "eth0"))  # another router: fine
    with pytest.raises(ModelError) as err:
        validate(model(), instances)
    problems = err.value.details["errors"]
    assert {p["instance"] for p in problems} == {uid(11), uid(12)}
    assert all("router r1 has another port with that name" in p["message"] for p in problems)
    assert {p["line"] for p in problems} == {example_line("has another port with that name")}


@pytest.mark.parametrize("mtu", [67, 9217])
def test_an_mtu_outside_68_to_9216_fails_naming_the_port(mtu: int) -> None:
    with pytest.raises(ModelError, match=f"port eth0: mtu {mtu} is outside 68..9216") as err:
        refine(model(), {"router": [router(1)], "port": [port(11, 1, "eth0", mtu=mtu), port(12, 1, "eth1")]})
    assert err.value.details["instance"] == uid(11)
    assert err.value.details["entity"] == "port"
    assert err.value.details["line"].endswith(example_line("is outside"))


def test_deleting_a_router_that_still_has_ports_fails_its_validation() -> None:
    """The router in delete_validating_* is left out of its own validation compile."""
    with pytest.raises(ModelError, match="owner router") as err:
        validate(model(), {"router": [], "port": [port(11, 1, "eth0")]})
    assert uid(11) in err.value.message and uid(1) in err.value.message


def test_a_deleting_tree_purges_its_owned_resources_but_not_the_shared_one() -> None:
    def deleting(i: Mapping[str, Any]) -> bool:
        return bool(i["state"] == "deleting")

    result = refine(model(), {"router": [router(1)], "port": [port(11, 1, "eth0")]}, purge=deleting)
    assert not any(r.purged for r in result.sets[uid(1)])
    gone = {"state": "deleting"}
    result = refine(
        model(), {"router": [router(1) | gone], "port": [port(11, 1, "eth0") | gone]}, purge=deleting
    )
    assert all(r.purged for r in result.sets[uid(1)])
    assert not result.shared[0].purged


@settings(max_examples=30, deadline=None)
@given(ports=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=6), data=st.data())
def test_refining_any_subset_of_whole_trees_gives_those_trees_sets_as_in_a_full_compile(
    ports: list[int], data: Any
) -> None:
    """The partial == full invariant at the model level: a tree's set depends on that tree only."""
    routers = [router(r + 1) for r in range(len(ports))]
    trees = {
        uid(r + 1): [port(100 * (r + 1) + p, r + 1, f"eth{p}", mtu=1500 + p) for p in range(count)]
        for r, count in enumerate(ports)
    }
    everything = {"router": routers, "port": [p for ps in trees.values() for p in ps]}
    chosen = data.draw(st.lists(st.sampled_from(routers), unique_by=lambda i: i["id"]))
    subset = {"router": chosen, "port": [p for r in chosen for p in trees[r["id"]]]}
    full = refine(model(), everything)
    partial = refine(model(), subset)
    assert set(partial.sets) == {r["id"] for r in chosen}
    for root, resources in partial.sets.items():
        assert content(resources) == content(full.sets[root])
    assert {r.id for r in partial.shared} <= {r.id for r in full.shared}
