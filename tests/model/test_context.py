"""``lsm.all`` inside and outside a compile, and the per-compile memo."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pytest

import lsm.model
from lsm.catalog import Binding, ServiceEntity
from lsm.errors import ModelError
from lsm.model import (
    Resource,
    Service,
    all_instances,
    current_compile,
    implementation,
    model_from_module,
    refine,
    validate,
)
from tests.model import inst


class Item(ServiceEntity):
    name: str


class Other(ServiceEntity):
    name: str


item = Binding(Item, name="item")
other = Binding(Other, name="other")
SEEN: list[Any] = []


class Note(Resource, type="x::Note", id_attribute="name"):
    name: str


@implementation(item)
def look_around(svc: Service[Item]) -> Iterator[Resource]:
    SEEN.append(([i["id"] for i in lsm.model.all(item)], [i["id"] for i in all_instances("other")]))
    SEEN.append(current_compile().memo("count", lambda: object()))
    yield Note(agent="a", name=svc.name)


def model() -> lsm.model.Model:
    module = types.ModuleType("context_model")
    module.__dict__.update(item=item, other=other, look_around=look_around)
    return model_from_module(module)


def test_all_outside_a_compile_raises_a_clear_error() -> None:
    with pytest.raises(ModelError, match="only work while a compile runs"):
        lsm.model.all(item)


def test_all_returns_the_instance_dicts_of_the_compile_for_that_binding() -> None:
    SEEN.clear()
    items = [inst("i1", {"name": "a"}), inst("i2", {"name": "b"})]
    refine(model(), {"item": items, "other": [inst("o1", {"name": "c"})]})
    assert SEEN[0] == (["i1", "i2"], ["o1"])
    assert SEEN[2] == SEEN[0]
    # a binding absent from the compile has no instances
    SEEN.clear()
    refine(model(), {"item": [inst("i1", {"name": "a"})]})
    assert SEEN[0] == (["i1"], [])
    # and the compile is over afterwards
    with pytest.raises(ModelError):
        all_instances(item)


def test_all_of_an_unknown_binding_is_a_model_error_of_the_implementation() -> None:
    def peek(svc: Service[Item]) -> None:
        all_instances("router")

    m = model()
    m.implementations = {"item": [peek]}
    with pytest.raises(ModelError, match="no such binding"):
        refine(m, {"item": [inst("i1", {"name": "a"})]})


def test_memo_computes_once_per_compile() -> None:
    SEEN.clear()
    refine(model(), {"item": [inst("i1", {"name": "a"}), inst("i2", {"name": "b"})]})
    first = SEEN[1]
    assert SEEN[3] is first
    SEEN.clear()
    refine(model(), {"item": [inst("i1", {"name": "a"})]})
    assert SEEN[1] is not first


def test_the_context_tells_a_validation_compile_from_an_export() -> None:
    kinds: list[bool] = []

    def which(svc: Service[Item]) -> None:
        kinds.append(current_compile().validation)

    m = model()
    m.implementations = {"item": [which]}
    refine(m, {"item": [inst("i1", {"name": "a"})]})
    validate(m, {"item": [inst("i1", {"name": "a"})]})
    assert kinds == [False, True]
