"""A test model whose implementation fails on demand: ``Widget(explode=True)`` raises."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import lsm


class Widget(lsm.ServiceEntity):
    name: str
    explode: Annotated[bool, lsm.rw_plus] = False


widget = lsm.Binding(Widget, lifecycle="simple", identity="name")


class Gadget(lsm.Resource, type="test::Gadget", id_attribute="name"):
    name: str


@lsm.implementation(widget)
def gadgets(w: lsm.Service[Widget]) -> Iterator[lsm.Resource]:
    if w.explode:
        raise ValueError(f"widget {w.name} exploded")
    yield Gadget(agent="a", name=w.name)
