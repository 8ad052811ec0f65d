"""A test model on the ``editable`` lifecycle (tests/lifecycles): counters updated concurrently."""

from __future__ import annotations

from typing import Annotated

import lsm.catalog as c


class Counter(c.ServiceEntity):
    name: str
    value: Annotated[int, c.rw_plus] = 0


counter = c.Binding(Counter, lifecycle="editable", identity="name")
