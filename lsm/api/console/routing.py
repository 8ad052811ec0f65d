"""``ConsoleRoute``: console routes answer errors as HTML pages, not as the API's JSON bodies.

Why a route class: a browser shown ``{"error": ...}`` is lost. Every console router uses this
class, so an ``LsmError`` raised by a facade (unknown entity, version conflict...) or a refusal
of ``ConsoleAccess`` becomes a page with the same status and message; a 401 becomes the login
form (status 401) that comes back to the page asked for. Nothing else changes: statuses,
messages and redaction are those of the API.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from fastapi.routing import APIRoute

from lsm.api.console.render import bare_page
from lsm.api.console.session import ConsoleDenied, ConsoleUnavailable
from lsm.api.disclosure import redact
from lsm.errors import LsmError

TITLES = {
    400: "Not possible",
    401: "Log in",
    403: "Not allowed",
    404: "Not found",
    409: "Conflict",
    422: "Invalid input",
    503: "Not ready",
}


def error_page(request: Request, error: LsmError) -> Response:
    """The page of an engine error: login form for 401, else status, message and safe details."""
    if error.status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return bare_page(request, "login.html", status_code=401, next=target, message=str(error))
    body = redact(error.to_body())
    details = {k: v for k, v in body.items() if k not in ("error", "message")}
    return bare_page(
        request,
        "error.html",
        status_code=error.status,
        status=error.status,
        title=TITLES.get(error.status, "Error"),
        message=body.get("message", str(error)),
        details=details,
        back=request.headers.get("x-console-back"),
    )


class ConsoleRoute(APIRoute):
    """An ``APIRoute`` whose engine errors are rendered by ``error_page``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def console_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except ConsoleDenied as denied:
                return error_page(request, denied.error)
            except ConsoleUnavailable:
                return Response("the engine is not ready yet", status_code=503, media_type="text/plain")
            except LsmError as error:
                return error_page(request, error)

        return console_handler
