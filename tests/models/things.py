"""A test model: ``Thing`` (identity ``name``) owning ``Part``s, on the ``simple`` lifecycle."""

from __future__ import annotations

from typing import Annotated

import lsm.catalog as c


class Thing(c.ServiceEntity):
    """A thing with a size that may change, and a server-allocated slot."""

    name: str
    size: Annotated[int, c.rw_plus] = 1
    slot: Annotated[int | None, c.r] = None
    tags: Annotated[list[str], c.rw_plus] = []


class Part(c.ServiceEntity):
    """A part of a thing; optionally linked to a peer part."""

    thing: c.Ref[Thing]
    label: str
    peer: Annotated[c.Ref[Part] | None, c.rw_plus] = None


thing = c.Binding(Thing, lifecycle="simple", identity="name")
part = c.Binding(Part, lifecycle="simple", owner=thing, relation_to_owner="thing")
