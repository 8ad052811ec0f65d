"""A lean HTTP/1.1 client for the burst of a load scenario: one request per connection.

Why not httpx for the burst: with 1,000 requests in flight, httpcore's connection pool walks
every connection on every request event (``_assign_requests_to_connections``), so the client's
work grows with the square of the concurrency. A py-spy profile of ``python -m benchmarks e2e``
showed the load generator busy in that walk while the server's threads sat idle: the scenario
measured its own client. Here each request is its own asyncio connection: connect, write the
request (``Connection: close``), read the status line, the headers and ``Content-Length`` bytes
of body. That is all the scenario's server (uvicorn) sends for a JSON answer; anything else
(chunked bodies, a missing length) is an error, never guessed at.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

#: the longest status line or header line accepted
MAX_LINE = 16 * 1024


class HttpError(Exception):
    """No well-formed answer: the connection failed, closed early, or spoke something else."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def request(
    host: str,
    port: int,
    method: str,
    path: str,
    payload: Any = None,
    *,
    headers: dict[str, str] | None = None,
) -> Answer:
    """Send one request with a JSON ``payload`` (``None``: no body) on a new connection."""
    body = b"" if payload is None else json.dumps(payload).encode()
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    if payload is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    try:
        reader, writer = await asyncio.open_connection(host, port, limit=MAX_LINE)
    except OSError as exc:
        raise HttpError(f"connect: {exc}") from exc
    try:
        writer.write(head + body)
        await writer.drain()
        return await _read_answer(reader)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
        raise HttpError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass  # the server closed first (Connection: close): nothing left to release


async def _read_answer(reader: asyncio.StreamReader) -> Answer:
    status_line = await reader.readuntil(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise HttpError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    status = int(parts[1])
    length: int | None = None
    while True:
        line = await reader.readuntil(b"\r\n")
        if line == b"\r\n":
            break
        name, _, value = line.partition(b":")
        key = name.strip().lower()
        if key == b"content-length":
            length = int(value.strip())
        elif key == b"transfer-encoding":
            raise HttpError(f"unsupported transfer-encoding {value.strip()!r}")
    if length is None:
        raise HttpError("the answer has no Content-Length")
    return Answer(status, await reader.readexactly(length))
