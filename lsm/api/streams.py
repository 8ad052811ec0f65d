"""Caps on open event streams: per caller and in total, a 429 past either.

Why: an event stream (``/api/v1/events``, ``/console/events``) is a connection held open for
as long as the client likes, and each one reads the database every half second while it is
quiet. Without a cap, a few hundred streams from one client slowed every other request of the
server (``/health`` took seconds). So a process serves at most ``total`` streams at once, and at
most ``per_caller`` of one caller: the token's actor with authentication on, else the client's
address (every caller is ``local`` then). A stream past a cap is answered 429
``too_many_streams`` with ``Retry-After``; the caps are ``max_streams`` and
``max_streams_per_caller`` of the server configuration.

Why the slot is taken when the response starts, not in the route: the slot is given back in
the same frame (``CappedStream.__call__``'s ``finally``), whatever ends the stream (the client
going, the server stopping, an error), so no path can leak one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterable, Mapping
from typing import cast

from fastapi import Request
from fastapi.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from lsm.api.auth import Authenticator
from lsm.api.errors import error_response
from lsm.errors import TooManyStreams
from lsm.facade import RequestContext
from lsm.schemas.limits import DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_CALLER

#: seconds a refused client is told to wait before trying again
RETRY_AFTER = 10


class StreamLimits:
    """The open streams of one app, counted per caller."""

    def __init__(
        self, total: int = DEFAULT_MAX_STREAMS, per_caller: int = DEFAULT_MAX_STREAMS_PER_CALLER
    ) -> None:
        self.total = total
        self.per_caller = per_caller
        self._open: Counter[str] = Counter()
        self._lock = threading.Lock()

    def acquire(self, caller: str) -> None:
        """Take a slot for ``caller``, or raise ``TooManyStreams`` naming the cap reached."""
        with self._lock:
            if self._open[caller] >= self.per_caller:
                raise TooManyStreams(
                    f"this caller has {self.per_caller} event streams open already, the most one "
                    "caller may hold; close one, or retry later",
                    limit=self.per_caller,
                    scope="caller",
                    retry_after=RETRY_AFTER,
                )
            if sum(self._open.values()) >= self.total:
                raise TooManyStreams(
                    f"the server has {self.total} event streams open, the most it serves; retry later",
                    limit=self.total,
                    scope="server",
                    retry_after=RETRY_AFTER,
                )
            self._open[caller] += 1

    def release(self, caller: str) -> None:
        with self._lock:
            self._open[caller] -= 1
            if self._open[caller] <= 0:
                del self._open[caller]

    def open_streams(self) -> Mapping[str, int]:
        """Open streams per caller (what the tests and an operator look at)."""
        with self._lock:
            return dict(self._open)


def caller_of(request: Request, ctx: RequestContext) -> str:
    """Whom a stream counts against: the authenticated actor, else the client's address."""
    if cast(Authenticator, request.app.state.authenticator).enabled:
        return ctx.actor
    client = request.client
    return f"address:{client.host if client is not None else 'unknown'}"


class CappedStream(StreamingResponse):
    """A ``text/event-stream`` response that holds a slot of ``limits`` while it streams."""

    def __init__(self, content: AsyncIterable[str], *, limits: StreamLimits, caller: str) -> None:
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self.limits = limits
        self.caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            self.limits.acquire(self.caller)
        except TooManyStreams as refused:
            aclose = getattr(self.body_iterator, "aclose", None)
            if aclose is not None:
                await aclose()  # never started: nothing to clean but the generator itself
            answer = error_response(refused.status, refused.kind, refused.message, **refused.details)
            answer.headers["Retry-After"] = str(RETRY_AFTER)
            await answer(scope, receive, send)
            return
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.limits.release(self.caller)
