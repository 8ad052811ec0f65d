"""A model whose attributes carry JSON schema bounds, for the console's inline validation test:
a number range, a string's length and pattern, a choice (``Literal``: an ``enum``) and an
optional bounded number. No resources: orders stay in ``start`` (enough for a form)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

import lsm


class Link(lsm.ServiceEntity):
    """A link with bounded attributes."""

    name: Annotated[str, Field(min_length=3, max_length=12, pattern="^[a-z][a-z0-9-]*$")]
    mtu: Annotated[int, lsm.rw_plus, Field(ge=68, le=9000)] = 1500
    speed: Annotated[Literal["1g", "10g", "100g"], lsm.rw_plus] = "10g"
    weight: Annotated[int | None, lsm.rw_plus, Field(gt=0, lt=100)] = None


link = lsm.Binding(Link, lifecycle="simple", name="link", identity="name")
