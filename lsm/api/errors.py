"""The one place where errors become HTTP responses.

Why: clients (our own ``lsm.client`` included) rely on every error having the same body,
``{"error": <kind>, "message": <sentence>, **details}``, whatever raised it: an ``LsmError``
from the engine, FastAPI's request validation, Starlette's routing (unknown path, wrong
method), or a bug. The client turns the body back into the same ``lsm.errors`` class, so the
``kind`` strings here must be the ones of ``lsm.errors`` wherever one fits.

A request that meets the database at a bad moment (a lost connection, a server restarting, a
deadlock victim: ``lsm.store.transient``) is answered 503 ``unavailable`` with a
``Retry-After`` header, never a 500: the request was fine and its retry is the remedy.

What it must not do: leak a traceback or internal detail of an unexpected exception into the
response. Those are logged server-side, with the traceback, and answered with a bare 500. The
bodies of ``LsmError``s are redacted too (``lsm.api.disclosure``: no traceback, no absolute
server path) unless the caller may see details and asked for them.

Methods: a path that exists answers another method with 405 and an ``Allow`` header listing
every method of every route of that path (Starlette lists only the first route's), and
``OPTIONS`` on such a path answers 204 with the same ``Allow``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from sqlalchemy.exc import DBAPIError, DisconnectionError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lsm.api.disclosure import printable_errors, redact, shows_details
from lsm.errors import InvalidInput, LsmError, NotFound, Unavailable
from lsm.store.transient import RETRY_AFTER_S, describe, is_transient

logger = logging.getLogger("lsm.api")

#: kinds for errors that Starlette raises itself (routing), by status
_HTTP_KINDS: dict[int, str] = {
    400: "bad_request",
    404: NotFound.kind,
    405: "method_not_allowed",
    413: "payload_too_large",
    422: InvalidInput.kind,
    503: "unavailable",
}


def error_response(status_code: int, kind: str, message: str, **details: Any) -> JSONResponse:
    """A JSON error response in the one format of docs/api.md §2."""
    return JSONResponse({"error": kind, "message": message, **details}, status_code=status_code)


def _lsm_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LsmError)
    if exc.status >= 500 and exc.status != 503:  # a 503 is the database's moment, not a bug
        logger.error("engine error answered with %d: %s", exc.status, exc, exc_info=exc)
    body = exc.to_body()
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    if exc.status == 503:
        headers = {"Retry-After": str(RETRY_AFTER_S)}
    return JSONResponse(
        body if shows_details(request) else redact(body), status_code=exc.status, headers=headers
    )


def _unavailable(scope: Scope, exc: BaseException) -> Unavailable:
    """The answer to a request that met a transient database error (``lsm.store.transient``):
    a 503 the caller retries, logged as one line (an operational event, not a bug)."""
    logger.warning(
        "%s %s met the database at a bad moment (%s): answered 503",
        scope.get("method"),
        scope.get("path"),
        describe(exc),
    )
    return Unavailable(
        "the database connection was lost while answering this request; send it again after "
        f"{RETRY_AFTER_S} s (a change met with this answer may have been applied: a retried "
        "create with the same Idempotency-Key answers the first answer, a retried change with the "
        "same current_version is a 409 if it landed)",
        retry_after=RETRY_AFTER_S,
    )


def _database_error(request: Request, exc: Exception) -> JSONResponse:
    if not is_transient(exc):
        raise exc  # a bug: ``InternalErrorMiddleware`` logs it and answers 500
    return _lsm_error(request, _unavailable(request.scope, exc))


def validation_errors(errors: Sequence[Any]) -> list[dict[str, str]]:
    """FastAPI/pydantic error entries as ``[{"path", "in", "reason"}]``.

    ``path`` is the dotted field path inside its location (``attributes.mtu``,
    ``current_version``) and ``in`` the location (``body``, ``query``, ``path``, ``header``), so
    that a person sees which field of which part of the request is wrong. The offending input
    is not echoed: it may be large, and the caller sent it.
    """
    out: list[dict[str, str]] = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        where = loc[0] if loc and loc[0] in {"body", "query", "path", "header", "cookie"} else ""
        path = ".".join(loc[1:] if where else loc) or where
        out.append({"path": path, "in": where, "reason": str(error.get("msg", "invalid"))})
    return printable_errors(out)


def _request_validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = validation_errors(exc.errors())
    where = "; ".join(f"{e['in'] + '.' if e['in'] else ''}{e['path']}: {e['reason']}" for e in errors)
    return error_response(422, InvalidInput.kind, f"invalid request: {where}", errors=errors)


def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 405:
        return _method_not_allowed(request)
    kind = _HTTP_KINDS.get(exc.status_code, "http_error")
    response = error_response(exc.status_code, kind, str(exc.detail))
    if exc.status_code == 503:
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


#: the methods a route of this API may serve
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app serves on the request's path (and OPTIONS).

    Asked of the router itself, one method at a time, so that routes of included routers
    (which do not expose their methods) count too.
    """
    methods = {
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL
            for route in request.app.router.routes
        )
    }
    if methods:
        methods.add("OPTIONS")
    return sorted(methods)


def _method_not_allowed(request: Request) -> Response:
    allow = ", ".join(allowed_methods(request))
    if request.method == "OPTIONS":
        return Response(status_code=204, headers={"Allow": allow})
    response = error_response(
        405, _HTTP_KINDS[405], f"{request.method} is not allowed here; allowed: {allow}", allowed=allow
    )
    response.headers["Allow"] = allow
    return response


class InternalErrorMiddleware:
    """Answer any unexpected exception with a 500 ``{"error": "internal"}`` and log it.

    Why a middleware and not ``app.add_exception_handler(Exception, ...)``: Starlette runs a
    handler for ``Exception`` in its outermost middleware and then re-raises the exception, which
    makes in-process transports (``httpx.ASGITransport``) raise in the caller instead of
    returning the 500 that a real client would see. Catching it here keeps both the same.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if is_transient(exc) and not started:  # raised outside the routes (a middleware)
                error = _unavailable(scope, exc)
                headers = {"Retry-After": str(RETRY_AFTER_S)}
                await JSONResponse(error.to_body(), status_code=503, headers=headers)(scope, receive, send)
                return
            logger.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if started:  # too late for a clean answer; let the server drop the connection
                raise
            response = error_response(
                500, LsmError.kind, "internal server error; the server log has the details"
            )
            await response(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    """Register every handler of this module on ``app``."""
    app.add_exception_handler(LsmError, _lsm_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(StarletteHTTPException, _http_exception)
    for database_error in (DBAPIError, DisconnectionError):
        app.add_exception_handler(database_error, _database_error)
    app.add_middleware(InternalErrorMiddleware)
