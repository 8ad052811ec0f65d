"""The pure compile core: grouping per ownership tree, shared resources, and every model error.

The test model has three levels (site > rack > server, via ``relation_to_owner``) plus switches
that own nothing and belong to nobody, and a self-owned ``node`` entity for owner cycles.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest

from lsm.catalog import Binding, Ref, ServiceEntity, r
from lsm.errors import ModelError
from lsm.model import (
    IMPLEMENTATION_MARK,
    Model,
    Resource,
    Service,
    Shared,
    bindings_of,
    implementation,
    refine,
    shared,
    validate,
)
from tests.model import inst, uid

THIS = Path(__file__).name


def line_of(marker: str) -> str:
    """``test_refinement.py:<n>`` of the line holding ``marker`` (a comment) in this file."""
    for n, text in enumerate(Path(__file__).read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return f"{THIS}:{n}"
    raise AssertionError(marker)


# -- the model ------------------------------------------------------------------------------
class Site(ServiceEntity):
    name: str


class Rack(ServiceEntity):
    name: str
    site: Ref[Site]


class Switch(ServiceEntity):
    name: str


class Server(ServiceEntity):
    name: str
    rack: Ref[Rack]
    switch: Ref[Switch] | None = None
    ip: Annotated[str | None, r] = None


class Node(ServiceEntity):
    name: str
    parent: Ref["Node"]  # noqa: UP037 - a reference to its own entity, by name


site = Binding(Site, name="site")
rack = Binding(Rack, name="rack", owner=site, relation_to_owner="site")
server = Binding(Server, name="server", owner=rack, relation_to_owner="rack")
switch = Binding(Switch, name="switch")
node = Binding(Node, name="node")
node.owner, node.relation_to_owner = node, "parent"


class Thing(Resource, type="x::Thing", id_attribute="name"):
    name: str
    size: int = 1


class Dns(Resource, type="x::Dns", id_attribute="zone"):
    zone: str
    ttl: int = 60


@implementation(site, rack, server, switch)
def things(svc: Service[Any]) -> Iterator[Resource | Shared]:
    yield Thing(agent=svc.entity_name, name=svc.name, purged=svc.purge_resources)
    yield shared(Dns(agent="dns", zone="lab"))


@implementation(server)
def server_nic(svc: Service[Server]) -> list[Resource]:
    nic = Thing(agent="nic", name=svc.name, requires=[Thing.resource_id("rack", svc.rack.name)])
    return [nic]


def make(*extra: Callable[..., Any], replace: bool = False) -> Model:
    impls: dict[str, list[Callable[..., Any]]] = {}
    for fn in ((), (things, server_nic))[not replace] + extra:
        for b in bindings_of(fn):
            impls.setdefault(b.name, []).append(fn)
    return Model(bindings=[site, rack, server, switch, node], implementations=impls)


def topology() -> dict[str, list[dict[str, Any]]]:
    """Two sites: s1 > r1 > (v1, v2) and s2 > r2 > v3; one switch."""
    return {
        "site": [inst(1, {"name": "s1"}), inst(2, {"name": "s2"})],
        "rack": [inst(11, {"name": "r1", "site": uid(1)}), inst(21, {"name": "r2", "site": uid(2)})],
        "server": [
            inst(111, {"name": "v1", "rack": uid(11), "switch": uid(50)}),
            inst(112, {"name": "v2", "rack": uid(11)}),
            inst(211, {"name": "v3", "rack": uid(21)}),
        ],
        "switch": [inst(50, {"name": "sw"})],
    }


def ids(resources: list[Resource]) -> list[str]:
    return sorted(r.id for r in resources)


# -- grouping ---------------------------------------------------------------------------------
def test_one_set_per_tree_named_after_the_root_with_intermediate_owners() -> None:
    result = refine(make(), topology())
    assert set(result.sets) == {uid(1), uid(2), uid(50)}
    assert ids(result.sets[uid(1)]) == [
        "x::Thing[nic,name=v1]",
        "x::Thing[nic,name=v2]",
        "x::Thing[rack,name=r1]",
        "x::Thing[server,name=v1]",
        "x::Thing[server,name=v2]",
        "x::Thing[site,name=s1]",
    ]
    assert ids(result.sets[uid(50)]) == ["x::Thing[switch,name=sw]"]
    assert ids(result.shared) == ["x::Dns[dns,zone=lab]"]
    assert result.tree_of[uid(111)] == result.tree_of[uid(11)] == uid(1)
    assert result.owner_of["x::Thing[nic,name=v3]"] == uid(211)
    assert result.resources_by_instance[uid(111)] == ["x::Thing[server,name=v1]", "x::Thing[nic,name=v1]"]
    assert result.resource_count == 6 + 4 + 1 + 1
    assert set(result.timings) == {"unroll", "implementations", "check", "total"}


def test_an_instance_without_resources_still_has_its_tree_set() -> None:
    result = refine(make(replace=True), topology())
    assert result.sets == {uid(1): [], uid(2): [], uid(50): []}
    assert result.shared == []


def test_trees_limits_the_returned_sets() -> None:
    assert set(refine(make(), topology(), trees=[uid(2)]).sets) == {uid(2)}


def test_an_owner_missing_from_the_compile_names_both_ids() -> None:
    topo = topology()
    topo["rack"] = [topo["rack"][1]]  # r1 left out, its servers stay
    with pytest.raises(ModelError) as err:
        refine(make(), topo)
    problems = err.value.details["errors"]
    assert [p["kind"] for p in problems] == ["owner_missing", "owner_missing"]
    assert {p["instance"] for p in problems} == {uid(111), uid(112)}
    assert all(p["owner"] == uid(11) and p["attribute"] == "rack" for p in problems)
    assert uid(111) in err.value.message and uid(11) in err.value.message


def test_an_owner_of_another_entity_is_reported_once() -> None:
    topo = topology()
    topo["rack"][0]["attributes"]["site"] = uid(50)  # a switch
    with pytest.raises(ModelError) as err:
        refine(make(), topo)
    (problem,) = err.value.details["errors"]
    assert problem["message"] == f"rack {uid(11)}: its owner site {uid(50)} (attribute 'site') is a switch"


def test_a_cycle_in_owner_relations_is_a_model_error() -> None:
    nodes = [inst(1, {"name": "a", "parent": uid(2)}), inst(2, {"name": "b", "parent": uid(3)})]
    nodes.append(inst(3, {"name": "c", "parent": uid(1)}))
    with pytest.raises(ModelError, match="owner relations form a cycle") as err:
        refine(make(), {"node": nodes})
    (problem,) = err.value.details["errors"]
    assert set(problem["cycle"]) == {uid(1), uid(2), uid(3)}


def test_an_identical_owned_resource_from_two_instances_of_one_tree_is_kept_once() -> None:
    @implementation(server)
    def rack_label(svc: Service[Server]) -> Iterator[Resource]:
        yield Thing(agent="label", name=svc.rack.name)
        yield Thing(agent="label", name=svc.rack.name)  # the same instance twice: also fine

    result = refine(make(rack_label), topology())
    labels = [r for r in result.sets[uid(1)] if r.agent == "label"]
    assert [r.id for r in labels] == ["x::Thing[label,name=r1]"]
    assert result.owner_of["x::Thing[label,name=r1]"] == uid(111)
    assert "x::Thing[label,name=r1]" in result.resources_by_instance[uid(112)]
    assert len(result.sets[uid(1)]) == 7


# -- model errors -------------------------------------------------------------------------------
def test_an_exception_in_an_implementation_names_the_instance_and_the_line() -> None:
    @implementation(server)
    def fragile(svc: Service[Server]) -> Iterator[Resource]:
        if svc.name == "v2":
            raise ValueError("no room in the rack")  # BOOM
        yield from ()

    with pytest.raises(ModelError) as err:
        refine(make(fragile), topology())
    (problem,) = err.value.details["errors"]
    assert problem["kind"] == "implementation_failed"
    assert problem["instance"] == uid(112) and problem["entity"] == "server"
    assert problem["line"].endswith(line_of("BOOM"))
    assert "ValueError: no room in the rack" in problem["message"] and "fragile" in problem["message"]
    assert "Traceback" in problem["traceback"]
    assert err.value.details["instance"] == uid(112)


def test_a_model_rule_raised_as_model_error_fails_the_compile_with_its_message() -> None:
    @implementation(switch)
    def rule(svc: Service[Switch]) -> None:
        raise ModelError("switch names must be longer")  # RULE

    with pytest.raises(ModelError, match="switch names must be longer") as err:
        refine(make(rule), topology())
    assert err.value.details["line"].endswith(line_of("RULE"))


def test_an_invalid_resource_names_the_resource_type_and_the_line() -> None:
    @implementation(switch)
    def bad(svc: Service[Switch]) -> Iterator[Resource]:
        yield Thing(agent="x", name=svc.name, size="big")  # INVALID

    with pytest.raises(ModelError, match="while building Thing") as err:
        refine(make(bad), topology())
    assert err.value.details["resource"] == "Thing"
    assert err.value.details["line"].endswith(line_of("INVALID"))


def test_producing_something_else_than_a_resource_is_a_model_error() -> None:
    @implementation(switch)
    def sloppy(svc: Service[Switch]) -> Iterator[Any]:
        yield "x::Thing[a,name=b]"

    with pytest.raises(ModelError, match=r"produced 'x::Thing\[a,name=b\]' \(str\), not a Resource"):
        refine(make(sloppy), topology())


def test_a_resource_owned_by_two_trees_can_not_be_in_two_sets() -> None:
    @implementation(server)
    def vlan(svc: Service[Server]) -> Iterator[Resource]:
        yield Thing(agent="vlan", name="vlan-10")  # TWO_SETS

    with pytest.raises(ModelError) as err:
        refine(make(vlan), topology())
    (problem,) = err.value.details["errors"]
    assert problem["message"].startswith(
        "resource x::Thing[vlan,name=vlan-10] can not be part of multiple resource sets: "
        f"{uid(1)} and {uid(2)}"
    )
    assert problem["instance"] == uid(211) and problem["other_instance"] == uid(111)
    assert problem["resource"] == "x::Thing[vlan,name=vlan-10]"
    assert problem["line"].endswith(line_of("TWO_SETS"))


def test_an_owned_resource_produced_twice_differently_is_a_model_error() -> None:
    @implementation(server)
    def sized(svc: Service[Server]) -> Iterator[Resource]:
        yield Thing(agent="label", name=svc.rack.name, size=len(svc.name) + int(svc.name[1]))  # DIFFERENT

    with pytest.raises(ModelError, match="produced twice with different attributes") as err:
        refine(make(sized), topology())
    assert err.value.details["line"].endswith(line_of("DIFFERENT"))
    assert err.value.details["instance"] == uid(112)


def test_two_different_shared_resources_with_one_id_name_the_id_and_both_producers() -> None:
    @implementation(switch, site)
    def zone(svc: Service[Any]) -> Iterator[Shared]:
        yield shared(Dns(agent="dns", zone="lab", ttl=len(svc.name) * 100))  # SHARED

    topo = topology()
    topo["site"][1]["attributes"]["name"] = "site-2"
    with pytest.raises(ModelError) as err:
        refine(make(zone, replace=True), topo)
    (problem,) = err.value.details["errors"]
    assert problem["kind"] == "shared_conflict"
    assert problem["resource"] == "x::Dns[dns,zone=lab]"
    assert f"site {uid(1)}" in problem["message"] and f"site {uid(2)}" in problem["message"]
    assert problem["line"].endswith(line_of("SHARED"))


def test_a_resource_both_owned_and_shared_is_a_model_error() -> None:
    @implementation(switch)
    def owns_dns(svc: Service[Switch]) -> Resource:
        return Dns(agent="dns", zone="lab")

    with pytest.raises(ModelError, match=r"is owned by switch .* and produced as shared by"):
        refine(make(owns_dns), topology())


def test_a_dangling_requires_names_both_ids() -> None:
    @implementation(switch)
    def cabled(svc: Service[Switch]) -> Resource:
        return Thing(agent="cable", name=svc.name, requires=["x::Thing[patch,name=p1]"])  # DANGLING

    with pytest.raises(ModelError) as err:
        refine(make(cabled), topology())
    (problem,) = err.value.details["errors"]
    assert problem["kind"] == "dangling_requires"
    assert "x::Thing[cable,name=sw] requires x::Thing[patch,name=p1]" in problem["message"]
    assert problem["instance"] == uid(50)
    assert problem["line"].endswith(line_of("DANGLING"))


def test_requiring_a_resource_of_another_set_is_a_model_error_shared_ones_are_fine() -> None:
    @implementation(server)
    def uplink(svc: Service[Server]) -> Iterator[Resource]:
        requires = [Dns.resource_id("dns", "lab")]
        if svc.switch is not None:
            requires.append(Thing.resource_id("switch", svc.switch.name))
        yield Thing(agent="uplink", name=svc.name, requires=requires)

    with pytest.raises(ModelError, match=r"requires x::Thing\[switch,name=sw\] of another") as err:
        refine(make(uplink), topology())
    assert err.value.details["instance"] == uid(111)
    # a validation compile refines the same way: the report names export rule 6 and both sets
    assert "(export rule 6)" in err.value.message
    assert (err.value.details["rule"], err.value.details["requires"]) == (6, "x::Thing[switch,name=sw]")
    assert len(err.value.details["sets"]) == 2 and uid(50) in err.value.details["sets"]
    topo = topology()
    topo["server"][0]["attributes"]["switch"] = None
    refine(make(uplink), topo)


def test_all_problems_are_reported_together() -> None:
    @implementation(server)
    def broken(svc: Service[Server]) -> None:
        raise RuntimeError(f"broken {svc.name}")

    with pytest.raises(ModelError, match=r"^3 model errors: ") as err:
        refine(make(broken), topology())
    assert [p["instance"] for p in err.value.details["errors"]] == [uid(111), uid(112), uid(211)]


# -- validation compiles and allocation -----------------------------------------------------------
@implementation(server)
def address(svc: Service[Server]) -> Iterator[Resource]:
    if svc.ip is None:
        svc.allocate(ip=f"10.0.0.{svc.name[1:]}")
    yield Thing(agent="ip", name=svc.ip)


def test_allocate_sets_r_attributes_and_returns_them_in_the_result() -> None:
    topo = topology()
    topo["server"][2]["attributes"]["ip"] = "10.9.9.9"
    result = validate(make(address), topo)
    assert result.allocations == {uid(111): {"ip": "10.0.0.1"}, uid(112): {"ip": "10.0.0.2"}}
    assert "x::Thing[ip,name=10.0.0.1]" in result.owner_of
    assert "x::Thing[ip,name=10.9.9.9]" in result.owner_of


def test_only_r_attributes_can_be_allocated() -> None:
    @implementation(switch)
    def rename(svc: Service[Switch]) -> None:
        svc.allocate(name="other")

    with pytest.raises(ModelError, match="only 'r' attributes can be allocated, not 'name'"):
        refine(make(rename), topology())


def test_validation_fails_with_the_same_errors_as_an_export() -> None:
    @implementation(server)
    def vlan(svc: Service[Server]) -> Iterator[Resource]:
        yield Thing(agent="vlan", name="vlan-10")

    with pytest.raises(ModelError) as exported:
        refine(make(vlan), topology())
    with pytest.raises(ModelError) as validated:
        validate(make(vlan), topology())
    assert exported.value.details["errors"] == validated.value.details["errors"]


def test_validation_of_an_instance_left_out_fails_while_others_refer_to_it() -> None:
    """simple_with_delete_validate: the router being deleted is not in its own validation."""
    topo = topology()
    del topo["rack"][0]
    with pytest.raises(ModelError, match="owner"):
        validate(make(), topo)


# -- implementations ---------------------------------------------------------------------------
def test_one_function_may_implement_several_bindings_and_marks_stack() -> None:
    @implementation(site)
    @implementation(rack, site)
    def both(svc: Service[Any]) -> None:
        return None

    assert bindings_of(both) == (rack, site)
    assert getattr(both, IMPLEMENTATION_MARK) == (rack, site)
    with pytest.raises(TypeError):
        implementation("site")  # type: ignore[arg-type]  # the wrong type is the point


def test_the_garbage_collector_is_paused_during_the_run_and_restored_even_on_error() -> None:
    seen: list[bool] = []

    @implementation(switch)
    def probe(svc: Service[Switch]) -> None:
        seen.append(gc.isenabled())

    @implementation(switch)
    def fail(svc: Service[Switch]) -> None:
        raise RuntimeError("boom")

    assert gc.isenabled()
    refine(make(probe), topology())
    assert seen == [False] and gc.isenabled()
    with pytest.raises(ModelError):
        refine(make(fail), topology())
    assert gc.isenabled()
    refine(make(probe), topology(), pause_gc=False)
    assert seen == [False, True]
