"""A test model whose implementation blocks in C, allocates without end, or blocks once.

``Blocker(mode=...)``:

* ``"ok"``: one resource, at once;
* ``"sleep"``: libc ``sleep`` through ctypes for ``BLOCK_SECONDS`` (the interpreter can not
  interrupt it: only killing its process stops it);
* ``"regex"``: a catastrophically backtracking pattern in ``re`` (C code holding the
  interpreter lock for longer than any test waits);
* ``"allocate"``: allocates until the memory limit refuses;
* ``"once:<path>"``: blocks like ``"sleep"`` unless ``<path>`` exists, which it creates first
  (so a compile sent again after its process was killed goes through).
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import lsm

#: how long ``sleep`` blocks: far beyond the time limits of the tests
BLOCK_SECONDS = 60


class Blocker(lsm.ServiceEntity):
    name: str
    mode: Annotated[str, lsm.rw_plus] = "ok"


blocker = lsm.Binding(Blocker, lifecycle="simple", identity="name")


class Brick(lsm.Resource, type="test::Brick", id_attribute="name"):
    name: str


def _block() -> None:
    ctypes.CDLL(None).sleep(BLOCK_SECONDS)


@lsm.implementation(blocker)
def bricks(b: lsm.Service[Blocker]) -> Iterator[lsm.Resource]:
    mode = b.mode
    if mode == "sleep":
        _block()
    elif mode == "regex":
        re.match(r"(a+)+$", "a" * 64 + "b")
    elif mode == "allocate":
        hoard = []
        while True:
            hoard.append(bytearray(32 * 1024 * 1024))
    elif mode.startswith("once:"):
        marker = Path(mode.removeprefix("once:"))
        if not marker.exists():
            marker.touch()
            _block()
    yield Brick(agent="a", name=b.name)
