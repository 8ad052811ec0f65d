"""Reading ``GET /api/v1/events``: a server-sent-events parser and the sync and async streams.

A stream is a context manager and an iterator. Entering it opens the connection: once
``with client.events() as stream:`` is inside, the server has fixed the stream's starting
position, so whatever happens after (a compile you request next) will be on it. Iterating
yields ``ServerEvent``s; each ``id`` may be given back as ``last_event_id`` to resume after it.

    with client.events() as stream:
        queued = client.request_compile(kind="full")
        for event in stream:
            if event.event == "compile_finished" and event.data["id"] == queued["id"]:
                break
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx

from lsm.client.errors import error_from_response

if TYPE_CHECKING:
    from lsm.schemas.events import ServerEvent

EVENTS_PATH = "/api/v1/events"
#: how long a stream may stay silent before the client gives up (the server sends keep-alives)
READ_TIMEOUT = 60.0


class SseParser:
    """Turns the lines of a ``text/event-stream`` into events (comments and retry lines ignored)."""

    def __init__(self) -> None:
        self._id: str | None = None
        self._event = "message"
        self._data: list[str] = []

    def feed(self, line: str) -> ServerEvent | None:
        """One line (without its newline); the event it completes, if any."""
        if line == "":
            if not self._data:
                self._event = "message"
                return None
            # imported here: a command that follows no stream (most) need not build the model
            from lsm.schemas.events import ServerEvent

            event = ServerEvent(id=self._id, event=self._event, data=_json_object("\n".join(self._data)))
            self._event, self._data = "message", []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "id":
            self._id = value
        elif field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        return None

    def events(self, lines: Iterable[str]) -> Iterator[ServerEvent]:
        for line in lines:
            event = self.feed(line)
            if event is not None:
                yield event


def _json_object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {"value": value}


def _request_headers(last_event_id: str | None) -> dict[str, str]:
    headers = {"Accept": "text/event-stream"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    return headers


class EventStream(AbstractContextManager["EventStream"], Iterator["ServerEvent"]):
    """The sync stream (``Client.events``)."""

    def __init__(self, http: httpx.Client, *, last_event_id: str | None, read_timeout: float | None) -> None:
        self._http = http
        self._request = http.build_request(
            "GET",
            EVENTS_PATH,
            headers=_request_headers(last_event_id),
            timeout=httpx.Timeout(http.timeout.connect, read=read_timeout, write=None, pool=None),
        )
        self._response: httpx.Response | None = None
        self._events: Iterator[ServerEvent] | None = None
        #: the id of the last event read: resume after it with ``events(last_event_id=...)``
        self.last_event_id = last_event_id

    def open(self) -> EventStream:
        """Connect (raises the ``lsm.errors`` class of an error answer)."""
        if self._response is None:
            response = self._http.send(self._request, stream=True)
            if response.status_code >= 400:
                response.read()
                response.close()
                raise error_from_response(response)
            self._response = response
            self._events = SseParser().events(response.iter_lines())
        return self

    def close(self) -> None:
        if self._response is not None:
            self._response.close()

    def __enter__(self) -> EventStream:
        return self.open()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __next__(self) -> ServerEvent:
        self.open()
        assert self._events is not None
        event = next(self._events)
        self.last_event_id = event.id or self.last_event_id
        return event


class AsyncEventStream(AbstractAsyncContextManager["AsyncEventStream"], AsyncIterator["ServerEvent"]):
    """The async stream (``AsyncClient.events``)."""

    def __init__(
        self, http: httpx.AsyncClient, *, last_event_id: str | None, read_timeout: float | None
    ) -> None:
        self._http = http
        self._request = http.build_request(
            "GET",
            EVENTS_PATH,
            headers=_request_headers(last_event_id),
            timeout=httpx.Timeout(http.timeout.connect, read=read_timeout, write=None, pool=None),
        )
        self._response: httpx.Response | None = None
        self._lines: AsyncIterator[str] | None = None
        self._parser = SseParser()
        self.last_event_id = last_event_id

    async def open(self) -> AsyncEventStream:
        if self._response is None:
            response = await self._http.send(self._request, stream=True)
            if response.status_code >= 400:
                await response.aread()
                await response.aclose()
                raise error_from_response(response)
            self._response = response
            self._lines = response.aiter_lines()
        return self

    async def aclose(self) -> None:
        if self._response is not None:
            await self._response.aclose()

    async def __aenter__(self) -> AsyncEventStream:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def __anext__(self) -> ServerEvent:
        await self.open()
        assert self._lines is not None
        async for line in self._lines:
            event = self._parser.feed(line)
            if event is not None:
                self.last_event_id = event.id or self.last_event_id
                return event
        raise StopAsyncIteration
