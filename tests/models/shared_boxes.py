"""A test model for shared resources: each ``box`` owns one item and shares one ``Common``.

``share`` names the shared resource a box produces and ``flavour`` its content, both ``rw+``:
moving boxes between shared resources leaves stale ones behind after partial compiles (what a
full compile garbage-collects), and two boxes sharing one name with different flavours is the
conflict refining everything reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import lsm


class Box(lsm.ServiceEntity):
    name: str
    share: Annotated[str, lsm.rw_plus] = "common"
    flavour: Annotated[str, lsm.rw_plus] = "plain"
    size: Annotated[int, lsm.rw_plus] = 1


box = lsm.Binding(Box, lifecycle="simple", name="box", identity="name")


class Item(lsm.Resource, type="box::Item", id_attribute="name"):
    name: str
    size: int


class Common(lsm.Resource, type="box::Common", id_attribute="name"):
    name: str
    flavour: str


@lsm.implementation(box)
def box_resources(b: lsm.Service[Box]) -> Iterator[lsm.Resource | lsm.Shared]:
    common = Common(agent="internal", name=b.share, flavour=b.flavour)
    yield lsm.shared(common)
    yield Item(agent=b.name, name=b.name, size=b.size, purged=b.purge_resources, requires=[common])
