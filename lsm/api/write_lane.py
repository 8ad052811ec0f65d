"""The write lane: instance changes wait for their transaction in threads of their own.

Why: a change route runs its facade call in a worker thread, and with group commit that thread
mostly waits for its batch's commit (``lsm.orchestration.group``). In the event loop's default
thread pool (40 threads, shared with every sync route and the access checks) a burst of 1,000
PATCHes held all 40 threads and queued the rest in front of every read: a GET of one instance
waited for the whole burst (``benchmarks e2e`` with a reader beside it). Changes now take
tokens of a limiter of their own, as many as one group-commit batch holds, so that a batch can
fill while reads, the console and the access checks keep the default pool.

The lane has a door (``ChangeAdmission``, an ASGI middleware, the outermost of the API's): a
change request waits there, in arrival order, until fewer than two batches of changes are
inside; only then do the middlewares, the routing, the dependencies (authentication) and the body's
parsing and validation run for it. Its body is read before it waits (up to the body limit), so
that a client that sends a body slowly never holds a place. Why: a burst arrives all at once.
Without the door the event loop ran that work for every request of the burst before the first
group commit could take the GIL for long, the compile worker had nothing to validate meanwhile,
and a read waited behind the whole burst. With the door, the first batch is parsed and committed
while the rest wait, and parsing the next batch overlaps the commit of the one before: the first
commit comes sooner, and so do PATCH answers and reads during the burst, at the same rate
(benchmarks/RESULTS.md). The answers are the same: the door only orders when a change starts.

Two batches, not one: with one, the batch inside waited for the write lock (a worker's export
holds it for tens of milliseconds) while the event loop had nothing to read, so each wait
stalled the intake. With two, the loop reads the next batch meanwhile: more updates per
second and lower PATCH latency than with one (benchmarks/RESULTS.md).

The limiter and the door's semaphore belong to the running event loop (anyio creates the
limiter for the loop's backend); a server has one loop, tests may start several.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lsm.api.limits import content_length
from lsm.orchestration.group import DEFAULT_MAX_BATCH

T = TypeVar("T")

#: threads the instance changes of one server may hold at once: one group-commit batch
WRITE_LANE_TOKENS = DEFAULT_MAX_BATCH

#: changes let past the door at once: two group-commit batches, so that the event loop reads
#: the next batch while one waits for the write lock and commits
DOOR_PLACES = 2 * DEFAULT_MAX_BATCH

#: the methods of a change (the others only read)
CHANGE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

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


class _Door:
    """One event loop's door: a FIFO semaphore that counts who is inside and who waits."""

    def __init__(self, limit: int) -> None:
        self._semaphore = asyncio.Semaphore(limit)  # wakes its waiters in arrival order
        self.inside = 0
        self.waiting = 0

    async def __aenter__(self) -> None:
        self.waiting += 1
        try:
            await self._semaphore.acquire()
        finally:
            self.waiting -= 1
        self.inside += 1

    async def __aexit__(self, *exc: object) -> None:
        self.inside -= 1
        self._semaphore.release()


class ChangeAdmission:
    """The lane's door: change requests under ``prefix`` enter ``limit`` at a time, in arrival
    order, before anything else is done for them (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, prefix: str, limit: int = DOOR_PLACES, max_body_bytes: int) -> None:
        if limit < 1:
            raise ValueError("the write lane's door must let at least one change in")
        self.app = app
        self.prefix = prefix
        self.limit = limit
        self.max_body_bytes = max_body_bytes
        #: changes whose body is still being read, before the door (tests, diagnostics)
        self.reading = 0
        self._doors: weakref.WeakKeyDictionary[AbstractEventLoop, _Door] = weakref.WeakKeyDictionary()

    def _door(self) -> _Door:
        loop = get_running_loop()
        door = self._doors.get(loop)
        if door is None:
            door = self._doors[loop] = _Door(self.limit)
        return door

    def counts(self) -> tuple[int, int]:
        """Changes inside the lane and waiting at its door, over every event loop (a server has
        one; for tests and diagnostics, from any thread)."""
        doors = list(self._doors.values())
        return sum(d.inside for d in doors), sum(d.waiting for d in doors)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in CHANGE_METHODS
            or not scope["path"].startswith(self.prefix)
        ):
            await self.app(scope, receive, send)
            return
        declared = content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            await self.app(scope, receive, send)  # a 413 before a byte is read (lsm.api.limits)
            return
        # the body is read before the door, so that a client sending it slowly waits without
        # holding a place; past the body limit the rest is left to the limit's 413 (inside)
        received: list[Message] = []
        size = 0
        self.reading += 1
        try:
            while True:
                message = await receive()
                received.append(message)
                if message["type"] != "http.request":
                    break  # the client went away
                size += len(message.get("body", b""))
                if not message.get("more_body", False) or size > self.max_body_bytes:
                    break
        finally:
            self.reading -= 1

        async def replay() -> Message:
            return received.pop(0) if received else await receive()

        async with self._door():
            await self.app(scope, replay, send)
