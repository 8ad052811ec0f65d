"""The model of the resource-id limit tests: a tag's ``label`` (not its identity) becomes the
identifying value of a resource, and a second resource requires it, so that one long label makes
two long ids in one row of the requires indexes (issue 31, M4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import lsm


class Tag(lsm.ServiceEntity):
    name: str
    label: Annotated[str, lsm.rw_plus] = ""


class Label(lsm.Resource, type="test::Label", id_attribute="label"):
    label: str


class Pin(lsm.Resource, type="test::Pin", id_attribute="label"):
    label: str


tag = lsm.Binding(Tag, lifecycle="shelf", name="tag", identity="name")


@lsm.implementation(tag)
def tag_resources(t: lsm.Service[Tag]) -> Iterator[lsm.Resource]:
    label = Label(agent="internal", label=t.label)
    yield label
    yield Pin(agent="internal", label=t.label, requires=[label])
