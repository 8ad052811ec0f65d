"""Slow clients are cut off: a request's headers must arrive within ``header_timeout`` seconds.

Why: uvicorn times out an idle keep-alive connection (``timeout_keep_alive``, after a response)
but nothing else. A connection that sends nothing, or sends its headers a byte at a time
("slowloris"), is kept for as long as the client likes, and a few thousand of them exhaust
the server's file descriptors. uvicorn has no setting for it, so ``HeaderDeadline`` adds one
to uvicorn's own HTTP protocol (httptools when installed, else h11): a deadline armed when a
connection opens and whenever it waits for its next request, disarmed once a request's
headers are complete; at the deadline the connection is closed. A request whose headers are
complete is not limited by it: a long answer (an event stream) or a slow compile runs on.
Headers larger than ``MAX_HEADER_BYTES`` close the connection too (httptools sets no bound).

``http_options`` gives the keyword arguments of ``uvicorn.run`` / ``uvicorn.Config`` for both:
``lsm server`` and ``BackgroundServer`` use them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from lsm.schemas.limits import DEFAULT_HEADER_TIMEOUT, DEFAULT_KEEP_ALIVE

#: the most bytes of headers one request may send before the connection is closed
MAX_HEADER_BYTES = 64 * 1024


class HeaderDeadline:
    """Mixin over a uvicorn HTTP protocol (see the module docstring); ``header_timeout`` is set
    on the class ``protocol_class`` makes. The attributes it reads (``transport``, ``cycle``,
    ``loop``) are the protocol's."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    transport: Any
    cycle: Any
    loop: asyncio.AbstractEventLoop

    _deadline: asyncio.TimerHandle | None = None
    _waiting_since: Any = None  # the cycle (request) that was current when the deadline was armed
    _header_bytes = 0

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]  # a mixin: the protocol it is mixed into has it
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]  # a mixin: the protocol it is mixed into has it
        if self._deadline is None:
            return
        if self.cycle is not self._waiting_since:  # a request's headers are complete
            self._disarm()
            return
        self._header_bytes += len(data)
        if self._header_bytes > MAX_HEADER_BYTES:
            self._cut()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]  # a mixin: the protocol it is mixed into has it
        waiting = self.cycle is None or self.cycle.response_complete  # no pipelined request runs
        if waiting and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]  # a mixin: the protocol it is mixed into has it

    def _arm(self) -> None:
        self._disarm()
        self._waiting_since = self.cycle
        self._header_bytes = 0
        self._deadline = self.loop.call_later(self.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.cycle is self._waiting_since:
            self._cut()

    def _cut(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()


def protocol_class(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with a ``header_timeout`` deadline on every request's headers."""
    name = f"HeaderDeadline{AutoHTTPProtocol.__name__}"
    return type(name, (HeaderDeadline, AutoHTTPProtocol), {"header_timeout": header_timeout})


def http_options(
    *, header_timeout: float = DEFAULT_HEADER_TIMEOUT, keep_alive: int = DEFAULT_KEEP_ALIVE
) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.run`` that time slow and idle clients out."""
    return {"http": protocol_class(header_timeout), "timeout_keep_alive": keep_alive}
