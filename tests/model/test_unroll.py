"""Service objects: engine fields, attributes, resolved references, and the compile's input checks."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

from lsm.catalog import Binding, Ref, ServiceEntity, r, rw_plus
from lsm.errors import ModelError
from lsm.model import Model, Resource, Service, implementation, model_from_module, refine
from tests.model import inst, uid


class Switch(ServiceEntity):
    name: str


class Link(ServiceEntity):
    name: str
    a: Ref[Switch]
    b: Ref[Switch] | None = None
    via: list[Ref[Switch]] = []
    state: Annotated[str, rw_plus] = "planned"  # shadowed by the engine's ``state``
    allocate: bool = False  # shadowed by the method
    vlan: Annotated[int | None, r] = None


switch = Binding(Switch, name="switch")
link = Binding(Link, name="link")

SEEN: dict[str, Service[Any]] = {}


class Cable(Resource, type="net::Cable", id_attribute="name"):
    name: str


@implementation(switch, link)
def remember(svc: Service[Any]) -> Iterator[Resource]:
    SEEN[svc.id] = svc
    yield Cable(agent="lab", name=svc.name)


def model() -> Model:
    module = types.ModuleType("unroll_model")
    module.__dict__.update(switch=switch, link=link, remember=remember)
    return model_from_module(module)


def compile_(links: list[dict[str, Any]], switches: tuple[int, ...] = (1, 2, 3), **kw: Any) -> None:
    SEEN.clear()
    refine(model(), {"switch": [inst(n, {"name": f"s{n}"}) for n in switches], "link": links}, **kw)


def test_engine_fields_and_attributes() -> None:
    compile_([inst(10, {"name": "l", "a": uid(1)}, state="creating", version=4)])
    svc = SEEN[uid(10)]
    assert (svc.id, svc.state, svc.version, svc.purge_resources) == (uid(10), "creating", 4, False)
    assert svc.name == "l"
    assert svc.entity_name == "link"
    assert isinstance(svc.entity, Link)
    assert svc.instance["active_attributes"] == {"name": "l", "a": uid(1)}
    with pytest.raises(AttributeError, match="no attribute 'colour'"):
        _ = svc.colour


def test_an_attribute_shadowed_by_an_engine_field_is_reachable_by_name() -> None:
    compile_([inst(10, {"name": "l", "a": uid(1), "state": "lit"}, state="up")])
    svc = SEEN[uid(10)]
    assert svc.state == "up"
    assert svc["state"] == "lit" == svc.entity.state
    assert callable(svc.allocate) and svc["allocate"] is False


def test_references_resolve_to_service_objects_single_optional_and_lists() -> None:
    compile_([inst(10, {"name": "l", "a": uid(1), "b": None, "via": [uid(2), uid(3)]})])
    svc = SEEN[uid(10)]
    assert svc.a is SEEN[uid(1)]
    assert svc.a.name == "s1"
    assert svc.b is None
    assert [s.name for s in svc.via] == ["s2", "s3"]
    assert str(svc.entity.a) == uid(1)  # the entity keeps the API value


def test_a_reference_outside_the_compile_names_both_ids_and_the_attribute() -> None:
    with pytest.raises(ModelError) as err:
        compile_([inst(10, {"name": "l", "a": uid(1), "via": [uid(9)]})])
    assert uid(10) in err.value.message and uid(9) in err.value.message and "'via'" in err.value.message
    (problem,) = err.value.details["errors"]
    assert problem["kind"] == "reference_missing"
    assert (problem["instance"], problem["target"], problem["attribute"]) == (uid(10), uid(9), "via")


def test_a_reference_to_an_instance_of_another_entity_is_refused() -> None:
    with pytest.raises(ModelError, match="a link, not a switch"):
        compile_([inst(10, {"name": "l", "a": uid(1)}), inst(11, {"name": "m", "a": uid(10)})])


def test_attributes_that_no_longer_fit_the_model_are_a_model_error() -> None:
    with pytest.raises(ModelError, match=f"{uid(10)}: attributes do not fit the model: a:"):
        compile_([inst(10, {"name": "l", "a": "not-a-uuid"})])


def test_an_instance_without_an_attribute_set_is_refused() -> None:
    with pytest.raises(ModelError, match="no attribute set"):
        compile_([inst(10, None)])


def test_an_unknown_entity_is_refused() -> None:
    with pytest.raises(ModelError, match="unknown service entity 'router'"):
        refine(model(), {"router": []})


def test_purge_from_a_mapping_a_function_or_the_instance_dict() -> None:
    links = [inst(10, {"name": "l", "a": uid(1)}, state="deleting"), inst(11, {"name": "m", "a": uid(1)})]
    compile_(links, purge={uid(10): True})
    assert (SEEN[uid(10)].purge_resources, SEEN[uid(11)].purge_resources) == (True, False)
    compile_(links, purge=lambda i: i["state"] == "deleting")
    assert (SEEN[uid(10)].purge_resources, SEEN[uid(11)].purge_resources) == (True, False)
    compile_([{**links[0], "purge_resources": True}, links[1]])
    assert (SEEN[uid(10)].purge_resources, SEEN[uid(11)].purge_resources) == (True, False)
