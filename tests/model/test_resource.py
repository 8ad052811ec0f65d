from __future__ import annotations

import pytest
from pydantic import ValidationError

from lsm.model import Resource, ResourceData, Shared, shared


class Host(Resource, type="net::Host", id_attribute="name"):
    name: str
    ip: str = "10.0.0.1"


class Port(Resource, type="net::Port", id_attribute="number"):
    number: int


def test_id_is_type_agent_and_identifying_attribute() -> None:
    assert Host(agent="net1", name="h1").id == "net::Host[net1,name=h1]"
    assert Port(agent="sw", number=7).id == "net::Port[sw,number=7]"


def test_id_is_computed_once() -> None:
    h = Host(agent="net1", name="h1")
    assert h.id is h.id


def test_resource_id_names_a_resource_without_building_it() -> None:
    assert Host.resource_id("net1", "h1") == Host(agent="net1", name="h1").id


def test_requires_take_resources_or_ids_and_are_not_attributes() -> None:
    h1 = Host(agent="net1", name="h1")
    h2 = Host(agent="net1", name="h2", requires=[h1, "net::Port[sw,number=1]"])
    assert h2.requires_ids == ("net::Host[net1,name=h1]", "net::Port[sw,number=1]")
    assert h2.attributes() == {"agent": "net1", "purged": False, "name": "h2", "ip": "10.0.0.1"}
    assert h2.to_data() == ResourceData(
        "net::Host[net1,name=h2]", h2.attributes(), ("net::Host[net1,name=h1]", "net::Port[sw,number=1]")
    )


def test_purged_defaults_to_false() -> None:
    assert Host(agent="a", name="h").purged is False
    assert Host(agent="a", name="h", purged=True).attributes()["purged"] is True


def test_resources_are_validated_and_frozen() -> None:
    with pytest.raises(ValidationError):
        Port(agent="sw", number="seven")
    with pytest.raises(ValidationError):
        Host(agent="a", name="h", colour="red")  # type: ignore[call-arg]  # the unknown field is the point
    h = Host(agent="a", name="h")
    with pytest.raises(ValidationError):
        h.name = "other"  # type: ignore[misc]  # assigning to a frozen resource is the point


def test_model_copy_recomputes_the_id() -> None:
    h = Host(agent="a", name="h")
    assert h.id == "net::Host[a,name=h]"
    assert h.model_copy(update={"name": "g"}).id == "net::Host[a,name=g]"


def test_same_as_compares_attributes_and_requires() -> None:
    a = Host(agent="a", name="h", requires=["x"])
    assert a.same_as(Host(agent="a", name="h", requires=["x"]))
    assert not a.same_as(Host(agent="a", name="h", requires=["y"]))
    assert not a.same_as(Host(agent="a", name="h", ip="10.0.0.2", requires=["x"]))
    req = Host(agent="a", name="r")
    assert Host(agent="a", name="h", requires=[req]).same_as(Host(agent="a", name="h", requires=[req.id]))


def test_a_declaration_without_id_attribute_fails_at_class_creation() -> None:
    with pytest.raises(TypeError, match="id_attribute"):

        class NoId(Resource, type="x::NoId"):
            name: str

    with pytest.raises(TypeError, match="not one of its fields"):

        class Typo(Resource, type="x::Typo", id_attribute="nmae"):
            name: str


def test_reserved_field_names_are_refused() -> None:
    with pytest.raises(TypeError, match="reserved"), pytest.warns(UserWarning):

        class Clash(Resource, type="x::Clash", id_attribute="name"):
            name: str
            id: str


def test_an_abstract_resource_class_can_be_subclassed() -> None:
    class Base(Resource):
        name: str

    class Concrete(Base, type="x::Concrete", id_attribute="name"):
        size: int = 1

    assert Concrete(agent="a", name="n").id == "x::Concrete[a,name=n]"
    with pytest.raises(TypeError, match="no resource type"):
        _ = Base(agent="a", name="n").id


def test_shared_wraps_a_resource_only() -> None:
    h = Host(agent="a", name="h")
    assert isinstance(shared(h), Shared)
    assert shared(h).resource is h
    with pytest.raises(TypeError):
        shared("net::Host[a,name=h]")  # type: ignore[arg-type]  # the wrong type is the point


def test_autoedges_are_needs_of_resource_ids_and_anything_else_fails_naming_the_resource() -> None:
    class Leaf(Resource, type="t::Leaf", id_attribute="name"):
        name: str
        bad: bool = False

        def autoedges(self) -> tuple[str | tuple[str, ...], ...]:
            if self.bad:
                return ((1, 2),)  # type: ignore[return-value]  # the wrong type on purpose
            return ("t::Root[a,name=r]", ("t::Dir[a,name=x]", "t::Dir[a,name=y]"))

    assert Leaf(agent="a", name="l").to_data().autoedges == (
        ("t::Root[a,name=r]",),
        ("t::Dir[a,name=x]", "t::Dir[a,name=y]"),
    )
    with pytest.raises(TypeError, match=r"t::Leaf\[a,name=l\]: autoedges"):
        Leaf(agent="a", name="l", bad=True).to_data()
