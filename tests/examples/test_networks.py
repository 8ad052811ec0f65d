"""examples/networks: one resource set per network, one shared agent config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lsm.model import Model, Resource, ResourceData, load_model, refine
from tests.model import inst, uid

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "networks"


def model() -> Model:
    return load_model(EXAMPLE)


def networks(count: int, hosts: dict[int, int] | None = None) -> list[dict[str, Any]]:
    hosts = hosts or {}
    return [inst(n + 1, {"name": f"net-{n}", "hosts": hosts.get(n, 5)}) for n in range(count)]


def content(resources: list[Resource]) -> list[ResourceData]:
    return sorted((r.to_data() for r in resources), key=lambda d: d.id)


def test_the_example_loads_with_its_binding_and_implementation() -> None:
    m = model()
    assert [b.name for b in m.bindings] == ["network"]
    assert [f.__name__ for f in m.implementations_for("network")] == ["network_hosts"]


def test_1000_networks_of_5_hosts_are_1000_sets_of_5_hosts_and_1_shared_resource() -> None:
    result = refine(model(), {"network": networks(1000)})
    assert len(result.sets) == 1000
    assert {len(rs) for rs in result.sets.values()} == {5}
    assert all(r.id.startswith("net::Host[") for rs in result.sets.values() for r in rs)
    assert [r.id for r in result.shared] == ["net::AgentConfig[internal,name=networks]"]
    assert result.resource_count == 5001
    first = result.sets[uid(1)]
    assert [r.id for r in first] == [f"net::Host[net-0,name=h{i}]" for i in range(5)]


def test_changing_one_networks_host_count_changes_exactly_one_set() -> None:
    before = refine(model(), {"network": networks(50)})
    after = refine(model(), {"network": networks(50, hosts={7: 2})})
    changed = [root for root in before.sets if content(before.sets[root]) != content(after.sets[root])]
    assert changed == [uid(8)]
    assert len(after.sets[uid(8)]) == 2
    assert content(before.shared) == content(after.shared)


def test_a_purging_network_marks_its_hosts_purged() -> None:
    result = refine(model(), {"network": networks(2)}, purge={uid(2): True})
    assert {r.purged for r in result.sets[uid(2)]} == {True}
    assert {r.purged for r in result.sets[uid(1)]} == {False}


@settings(max_examples=30, deadline=None)
@given(
    hosts=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=12),
    data=st.data(),
)
def test_refining_any_subset_of_networks_gives_the_same_sets_as_refining_all(
    hosts: list[int], data: Any
) -> None:
    everything = networks(len(hosts), dict(enumerate(hosts)))
    chosen = data.draw(st.lists(st.sampled_from(everything), unique_by=lambda i: i["id"]))
    full = refine(model(), {"network": everything})
    partial = refine(model(), {"network": chosen})
    assert set(partial.sets) == {i["id"] for i in chosen}
    for root, resources in partial.sets.items():
        assert content(resources) == content(full.sets[root])
    if chosen:
        assert content(partial.shared) == content(full.shared)
