"""Slow clients are cut off (docs/api.md §1): a real uvicorn server with a short header timeout
and raw sockets that trickle. Each test waits for the server to close the connection (bounded),
never measures how soon."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx

from lsm.api.server import BackgroundServer
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.waiting import DEFAULT_SECONDS

HEADER_TIMEOUT = 0.5


@contextmanager
def serving(engine: ApiRuntime) -> Iterator[BackgroundServer]:
    with BackgroundServer(engine.app, header_timeout=HEADER_TIMEOUT, keep_alive=1) as server:
        yield server


def closed_by_server(raw: socket.socket) -> bool:
    """Whether the server closed the connection (what it sent before the end is read and dropped)."""
    while select.select([raw], [], [], 0)[0]:
        try:
            if not raw.recv(65536):
                return True
        except ConnectionResetError:
            return True
    return False


def trickle_until_cut(raw: socket.socket, data: bytes) -> int:
    """Send ``data`` a byte at a time, slower than the header timeout allows in all, until the
    server closes the connection; the bytes sent by then (fails if it never does)."""
    deadline = time.monotonic() + DEFAULT_SECONDS
    for sent, byte in enumerate(data * 1000):
        if closed_by_server(raw):
            return sent
        try:
            raw.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return sent
        assert time.monotonic() < deadline, "the server never cut the slow client off"
        time.sleep(HEADER_TIMEOUT / 5)
    raise AssertionError("the server never cut the slow client off")


def connect(server: BackgroundServer) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=DEFAULT_SECONDS)


def test_headers_sent_a_byte_at_a_time_are_cut_off(engine: ApiRuntime) -> None:
    with serving(engine) as server, connect(server) as raw:
        sent = trickle_until_cut(raw, b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: yes\r\n")
        assert sent > 0
        # the server still serves everyone else
        assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200


def test_a_connection_that_sends_nothing_is_closed(engine: ApiRuntime) -> None:
    with serving(engine) as server, connect(server) as raw:
        wait_for_close(raw)


def test_an_idle_keep_alive_connection_and_a_slow_second_request_are_cut_off(engine: ApiRuntime) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"
    with serving(engine) as server:
        with connect(server) as raw:
            raw.sendall(request)
            assert raw.recv(65536).startswith(b"HTTP/1.1 200")
            wait_for_close(raw)  # idle after the answer: the keep-alive timeout
        with connect(server) as raw:
            raw.sendall(request)
            assert raw.recv(65536).startswith(b"HTTP/1.1 200")
            assert trickle_until_cut(raw, request) >= 0  # the next request trickles: cut too


def test_a_long_answer_outlives_the_header_timeout(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory()
    with serving(engine) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        with http.stream("GET", "/api/v1/events") as events:
            lines = events.iter_lines()
            assert next(lines) == ": connected"
            time.sleep(HEADER_TIMEOUT * 4)  # well past the header deadline
            engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": "a"})
            assert any(line.startswith("event: instance_state") for line in lines)


def wait_for_close(raw: socket.socket) -> None:
    deadline = time.monotonic() + DEFAULT_SECONDS
    while not closed_by_server(raw):
        assert time.monotonic() < deadline, "the server never closed the idle connection"
        select.select([raw], [], [], 0.1)
