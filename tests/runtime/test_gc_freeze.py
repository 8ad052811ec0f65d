"""A long-running process freezes its startup heap (``lsm.gc_pause.freeze_startup_heap``): what
is alive once it is built is out of the collector's reach, what comes later is collected."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from lsm.gc_pause import freeze_startup_heap


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """The test process gets its collector back as it was."""
    gc.unfreeze()
    yield
    gc.unfreeze()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_startup_heap_is_frozen_and_later_cycles_are_still_collected(unfrozen: None) -> None:
    built = _Cycle()  # alive at "startup": it stays, out of reach
    freeze_startup_heap()
    assert gc.get_freeze_count() > 0
    assert not gc.is_tracked(built) or built not in gc.get_objects(generation=2)

    later = _Cycle()
    alive = len(gc.get_objects())
    del later  # an unreachable cycle made after the freeze
    assert gc.collect() >= 1
    assert len(gc.get_objects()) < alive
