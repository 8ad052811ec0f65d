"""The write lane: instance changes wait for their transaction in threads of their own.

Why: a change route runs its facade call in a worker thread, and with group commit that thread
mostly waits for its batch's commit (``lsm.orchestration.group``). In the event loop's default
thread pool (40 threads, shared with every sync route and the access checks) a burst of 1,000
PATCHes held all 40 threads and queued the rest in front of every read: a GET of one instance
waited for the whole burst (2.2 s, ``benchmarks e2e`` with a reader beside it). Changes now take
tokens of a limiter of their own, as many as one group-commit batch holds, so that a batch can
fill while reads, the console and the access checks keep the default pool.

The limiter belongs to the running event loop (anyio creates it for the loop's backend); a
server has one loop, tests may start several.
"""

from __future__ import annotations

import functools
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from lsm.orchestration.group import DEFAULT_MAX_BATCH

T = TypeVar("T")

#: threads the instance changes of one server may hold at once: one group-commit batch
WRITE_LANE_TOKENS = DEFAULT_MAX_BATCH

_limiters: weakref.WeakKeyDictionary[AbstractEventLoop, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()


def _limiter() -> anyio.CapacityLimiter:
    loop = get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(WRITE_LANE_TOKENS)
    return limiter


async def run_change(func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``func(*args, **kwargs)`` (a facade call that changes instances) in a write-lane thread."""
    return await anyio.to_thread.run_sync(functools.partial(func, *args, **kwargs), limiter=_limiter())
