"""``GET /console/events``: the API's event stream for the console's ``EventSource``.

Why a second route: ``EventSource`` sends cookies but no ``Authorization`` header, so the API's
``/api/v1/events`` (bearer only) cannot serve it. This route resolves the caller from the
console session and streams exactly what the API streams (``lsm.api.events``), from now,
within the same caps.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.api.events import event_stream
from lsm.schemas.auth import Role

router = APIRouter(
    include_in_schema=False, route_class=ConsoleRoute, dependencies=[console_require(Role.VIEWER)]
)


@router.get("/console/events")
async def console_events(request: Request) -> StreamingResponse:
    """Instance changes and compile completions of the console's environment, from now."""
    feed = get_facades(request).events
    ctx = context_of(request)
    cursor = await run_in_threadpool(feed.start, ctx, request.headers.get("last-event-id"))
    return event_stream(request, ctx, feed, cursor)
