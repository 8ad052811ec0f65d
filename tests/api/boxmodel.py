"""The model of the input-limit tests: boxes with an identity, a text, a number and a flag.

Each box produces one resource whose id holds the identity value, so that an identity too long
for an index would break the full compile (the reproduction of issue 10); a box whose text is
``boom`` makes its implementation raise, for the tests of what a failed compile's report shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import lsm


class Box(lsm.ServiceEntity):
    name: str
    text: Annotated[str, lsm.rw_plus] = ""
    size: Annotated[int, lsm.rw_plus] = 1
    enabled: Annotated[bool, lsm.rw_plus] = True


class BoxConfig(lsm.Resource, type="test::Box", id_attribute="name"):
    name: str
    text: str


box = lsm.Binding(Box, lifecycle="shelf", name="box", identity="name")


@lsm.implementation(box)
def box_config(b: lsm.Service[Box]) -> Iterator[lsm.Resource]:
    if b.text == "boom":
        raise ValueError(f"box {b.name} exploded")
    yield BoxConfig(agent="internal", name=b.name, text=b.text)
