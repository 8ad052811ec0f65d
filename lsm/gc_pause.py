"""``gc_paused()``: the cyclic garbage collector off while a compile allocates what it keeps.

Why: a compile builds several objects per resource and keeps them all until it ends. That
growth triggers collections that traverse the ever larger heap again and again: measured at
about 30% of a 100k-network full compile (``benchmarks``, ``gc.callbacks``). Compiles create
no reference cycles that need collecting meanwhile; the objects go by reference counting
when the compile's result is dropped. Nested pauses are cheap, and a caller that had the
collector off keeps it off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused(enabled: bool = True) -> Iterator[None]:
    paused = enabled and gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
