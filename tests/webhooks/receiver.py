"""A real webhook receiver for tests: ``http.server`` on 127.0.0.1 in a thread.

It records every request (headers and raw body), answers ``fail_first`` requests with 500
before it answers 200, or 503 while ``down`` is set, and lets a test wait for a condition on
what it received (with a deadline: a missing delivery fails the test instead of hanging it).
Accepted deliveries are de-duplicated by ``X-LSM-Delivery`` as a real receiver would.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lsm.client import verify_signature

#: bounds every wait on deliveries
DEADLINE = 60.0


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


@dataclass
class Receiver:
    url: str = ""
    fail_first: int = 0
    down: bool = False
    requests: list[Received] = field(default_factory=list)
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def answer(self, headers: dict[str, str], body: bytes) -> int:
        with self._cond:
            if self.down:
                status = 503
            elif self.fail_first > 0:
                self.fail_first -= 1
                status = 500
            else:
                status = 200
            self.requests.append(Received(headers, body, status))
            self._cond.notify_all()
            return status

    @property
    def accepted(self) -> list[Received]:
        """Requests answered 2xx, each delivery id once (the receiver's de-duplication)."""
        with self._cond:
            seen: dict[str, Received] = {}
            for r in self.requests:
                if r.answered == 200:
                    seen.setdefault(r.headers["X-LSM-Delivery"], r)
            return list(seen.values())

    def wait_for(self, condition: Callable[[list[Received]], bool], what: str) -> list[Received]:
        """Wait until ``condition(accepted payloads)`` holds; the accepted requests then."""
        deadline = time.monotonic() + DEADLINE
        with self._cond:
            while True:
                accepted = [r for r in self.requests if r.answered == 200]
                if condition(accepted):
                    return accepted
                left = deadline - time.monotonic()
                assert left > 0, (
                    f"no {what} within {DEADLINE}s; received {[r.payload for r in self.requests]}"
                )
                self._cond.wait(min(left, 0.2))

    def all_signed_with(self, secret: str) -> bool:
        with self._cond:
            return all(
                verify_signature(secret, r.body, r.headers.get("X-LSM-Signature")) for r in self.requests
            )


def event_of(kind: str, **data: Any) -> Callable[[list[Received]], bool]:
    """A condition: some accepted delivery is of ``kind`` with ``data`` among its data."""

    def found(accepted: list[Received]) -> bool:
        return any(
            r.payload["event"] == kind and all(r.payload["data"].get(k) == v for k, v in data.items())
            for r in accepted
        )

    return found


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = receiver.answer(dict(self.headers.items()), body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
