"""The request body size limit: bytes are counted as they arrive, not trusted from a header.

Why a middleware: FastAPI reads the whole body before any route or dependency runs, so a
50 MB order was read, parsed and validated in full. Here a ``Content-Length`` above the limit
is answered 413 before reading anything, and a body without one (chunked) is cut off as soon
as the bytes received pass the limit: the route's read fails with a 413 ``HTTPException``,
which ``lsm.api.errors`` turns into the usual error body.
"""

from __future__ import annotations

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lsm.api.errors import error_response

PAYLOAD_TOO_LARGE = "payload_too_large"


def too_large_message(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


class BodyLimitMiddleware:
    """Answer 413 ``payload_too_large`` to any HTTP request whose body exceeds ``max_bytes``."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = content_length(scope)
        if declared is not None and declared > self.max_bytes:
            response = error_response(
                413, PAYLOAD_TOO_LARGE, too_large_message(self.max_bytes), limit=self.max_bytes
            )
            await response(scope, receive, send)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, too_large_message(self.max_bytes))
            return message

        await self.app(scope, counting_receive, send)


def content_length(scope: Scope) -> int | None:
    """The request's declared ``Content-Length``, if it has a valid one."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
