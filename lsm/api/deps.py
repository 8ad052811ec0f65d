"""Dependencies shared by the routers: the facades, and the ``RequestContext`` of a request.

``request_context`` is the ONE place that says who a request is from: the environment (the
``{env}`` path parameter of the routes that have one, else ``X-LSM-Environment``, a name or
id; the default environment when absent), the request id (``X-Request-ID`` when it is a short
printable string, else a fresh uuid4 hex; echoed on the response by ``RequestIdMiddleware``),
and the actor and roles of the bearer credential (``lsm.api.auth``: a 401 when authentication
is on and the credential is missing or not valid; ``local`` with every right when it is off).
What a route needs of those roles is declared on its router (``lsm.api.access.require``). No
route reads a header itself. ``public_context`` is the same without a credential (``/health``).

Why these are ``async def``: FastAPI runs a sync dependency in the thread pool, one hop per
dependency, each queued behind every request already waiting there. Under a burst of 1,000
requests every request passed each stage only after all the others had: the answers all came
at the end (p50 = max). These dependencies do no I/O on the event loop: looking up a token
(authentication on) still goes to the thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, cast

from fastapi import Depends, Header, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lsm.api.auth import Authenticator
from lsm.facade import LOCAL_ACTOR, Facades, RequestContext, new_request_id

ENVIRONMENT_HEADER = "X-LSM-Environment"
REQUEST_ID_HEADER = "X-Request-ID"
#: the longest request id accepted from a client (the event and compile columns hold 100)
MAX_REQUEST_ID = 100


def get_facades(request: Request) -> Facades:
    """The facades that ``create_app`` put on the application."""
    return cast(Facades, request.app.state.facades)


def is_ready(request: Request) -> bool:
    """Whether the runtime serving this app is started (``/health``)."""
    ready = cast(Callable[[], bool], request.app.state.is_ready)
    return ready()


async def ready_facades(request: Request) -> Facades:
    """The facades, or a 503 ``unavailable`` while the runtime is not started (or stopping).

    A 503 is the one answer clients retry (``lsm.client.RetryPolicy``): a request that arrives
    before ``start()`` or after ``stop()`` is not refused for good, it is early or late.
    """
    if not is_ready(request):
        raise HTTPException(503, "the engine is not ready yet")
    return get_facades(request)


def valid_request_id(value: str | None) -> str | None:
    """``value`` when it can be echoed and stored as a request id: 1..100 printable ASCII characters."""
    if value and len(value) <= MAX_REQUEST_ID and value.isascii() and value.isprintable():
        return value
    return None


#: ``Authorization: Bearer <token>`` (documented in OpenAPI as the ``bearer`` scheme)
bearer = HTTPBearer(
    auto_error=False,
    scheme_name="bearer",
    description="An API token (lsm_...) or, when configured, a JWT of the identity provider.",
)


async def public_context(
    request: Request,
    x_request_id: Annotated[
        str | None, Header(alias=REQUEST_ID_HEADER, description="Your id for this request.")
    ] = None,
) -> RequestContext:
    """The context of an open route: a request id, no caller (actor ``local``, no roles)."""
    request_id = valid_request_id(x_request_id) or new_request_id()
    request.state.request_id = request_id
    return RequestContext(actor=LOCAL_ACTOR, request_id=request_id, roles={})


async def request_context(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    x_lsm_environment: Annotated[
        str | None,
        Header(
            alias=ENVIRONMENT_HEADER,
            description="Environment name or id; the default environment when absent.",
        ),
    ] = None,
    x_request_id: Annotated[
        str | None,
        Header(
            alias=REQUEST_ID_HEADER,
            description="Your id for this request (printable, at most 100 characters); "
            "one is generated otherwise. Echoed in the response and recorded on what the request changed.",
        ),
    ] = None,
) -> RequestContext:
    """Who asks, in which environment, under which request id (see the module docstring)."""
    request_id = valid_request_id(x_request_id) or new_request_id()
    request.state.request_id = request_id
    authenticator = cast(Authenticator, request.app.state.authenticator)
    credential = credentials.credentials if credentials is not None else None
    if authenticator.enabled:  # a token lookup reads the database: not on the event loop
        principal = await run_in_threadpool(authenticator.principal, credential)
    else:
        principal = authenticator.principal(credential)
    environment = request.path_params.get("env") or x_lsm_environment or None
    context = RequestContext(
        actor=principal.actor, environment=environment, request_id=request_id, roles=principal.roles
    )
    if authenticator.enabled:  # who may see error details (lsm.api.disclosure.may_see_details)
        request.state.authenticated = context
    return context


class RequestIdMiddleware:
    """Echo the request id chosen by ``request_context`` in the response's ``X-Request-ID``.

    Why a middleware: error responses are built by the exception handlers, outside the route,
    and must carry the id too. The id is read from the request state, never from the headers.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})  # shared with the route's Request, even if scope is copied

        async def echoing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and state.get("request_id"):
                headers = list(message.get("headers", []))
                headers.append((REQUEST_ID_HEADER.lower().encode(), str(state["request_id"]).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, echoing_send)


FacadesDep = Annotated[Facades, Depends(ready_facades)]
ContextDep = Annotated[RequestContext, Depends(request_context)]
PublicContextDep = Annotated[RequestContext, Depends(public_context)]
