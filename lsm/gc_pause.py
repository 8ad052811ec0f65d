"""``gc_paused()``: the cyclic garbage collector off while a compile allocates what it keeps.

Why: a compile builds several objects per resource and keeps them all until it ends. That
growth triggers collections that traverse the ever larger heap again and again, a large
share of a big full compile (``benchmarks``, ``gc.callbacks``). Compiles create
no reference cycles that need collecting meanwhile; the objects go by reference counting
when the compile's result is dropped.

The collector is process-wide and compiles run on several threads (a worker runs validations
and exports side by side), so pauses are counted: the collector goes off with the first pause
and comes back when the last one ends, never while another compile still relies on it being
off. A process that had the collector off before any pause keeps it off.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_restore = False


@contextmanager
def gc_paused(enabled: bool = True) -> Iterator[None]:
    global _pauses, _restore
    if not enabled:
        yield
        return
    with _lock:
        if _pauses == 0:
            _restore = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _restore:
                gc.enable()


def freeze_startup_heap() -> None:
    """Collect once, then move every object alive now out of the collector's reach.

    Called by a long-running process (``lsm server``, ``lsm worker``, ``lsm agent``) once it is
    built: the app, models, schemas, catalog and SQLAlchemy's metadata live as long as the
    process, yet every full collection traversed them again. In ``lsm server`` under a burst
    of changes each full collection stopped the event loop and the group-commit writer, at
    times while it held the write lock. Objects made later are collected as before; what is
    frozen is never freed, which is what a process-long object needs.
    """
    gc.collect()
    gc.freeze()
