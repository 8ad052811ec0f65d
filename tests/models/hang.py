"""A test model whose implementation never returns for ``Sleeper(hang=True)`` (an endless loop)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import lsm


class Sleeper(lsm.ServiceEntity):
    name: str
    hang: Annotated[bool, lsm.rw_plus] = False


sleeper = lsm.Binding(Sleeper, lifecycle="simple", identity="name")


class Pillow(lsm.Resource, type="test::Pillow", id_attribute="name"):
    name: str


@lsm.implementation(sleeper)
def pillows(s: lsm.Service[Sleeper]) -> Iterator[lsm.Resource]:
    spins = 0
    while s.hang:  # the model bug under test: an endless loop in plain Python
        spins += 1
    yield Pillow(agent="a", name=s.name)
