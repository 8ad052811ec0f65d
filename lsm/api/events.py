"""``GET /api/v1/events``: server-sent events of the request's environment.

Instance state changes (``event: instance_state``), compile completions (``event:
compile_finished``) and deploy outcomes (``event: deploy_outcome``), each with the stream
position as its ``id``; reconnect with ``Last-Event-ID`` to resume right after it. The stream
tails the tables (``lsm.facade.events``) so that changes made by other processes appear too:
woken at once by changes of this process, it looks at the database every ``POLL_INTERVAL``
seconds otherwise, and sends a comment line every ``KEEPALIVE`` seconds of silence so that
proxies keep the connection open. It ends when the client disconnects (Starlette cancels the
stream); no thread is held while it waits. Open streams are capped per caller and in total
(``lsm.api.streams``: a 429 past a cap).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated, cast

from fastapi import APIRouter, Header, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.responses import READ, errors
from lsm.api.streams import CappedStream, StreamLimits, caller_of
from lsm.facade import Cursor, EventsFacade, RequestContext
from lsm.facade.holdback import Holdback
from lsm.schemas.auth import Role

router = APIRouter(tags=["events"], dependencies=[require(Role.VIEWER)], responses=errors(*READ))

#: seconds between two looks at the database when nothing was heard in this process
POLL_INTERVAL = 0.5
#: seconds of silence before a keep-alive comment
KEEPALIVE = 15.0


@router.get(
    "/api/v1/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "The event stream."},
        **errors(429),
    },
)
async def events(
    request: Request,
    facades: FacadesDep,
    ctx: ContextDep,
    last_event_id: Annotated[
        str | None, Header(alias="Last-Event-ID", description="Resume right after this event.")
    ] = None,
) -> StreamingResponse:
    """Instance changes, compile and deploy outcomes, from now or after ``Last-Event-ID``."""
    cursor = await run_in_threadpool(facades.events.start, ctx, last_event_id)
    return event_stream(request, ctx, facades.events, cursor)


def event_stream(
    request: Request, ctx: RequestContext, feed: EventsFacade, cursor: Cursor
) -> StreamingResponse:
    """The response streaming ``feed`` after ``cursor`` to ``ctx``'s caller, within the app's
    stream caps (shared with the console's stream)."""
    limits = cast(StreamLimits, request.app.state.stream_limits)
    return CappedStream(stream(feed, cursor), limits=limits, caller=caller_of(request, ctx))


async def stream(feed: EventsFacade, cursor: Cursor) -> AsyncIterator[str]:
    """The SSE lines of ``feed`` after ``cursor``, until the client goes (shared with the console)."""
    loop = asyncio.get_running_loop()
    yield ": connected\n\n"
    quiet_since = loop.time()
    holdback = Holdback()  # the stream's own: what it waits for, and since when
    while True:
        with feed.listener() as heard:
            items = await run_in_threadpool(partial(feed.read, cursor, holdback=holdback))
            for item in items:
                cursor = item.cursor
                yield f"id: {cursor.encode()}\nevent: {item.kind}\ndata: {item.data.model_dump_json()}\n\n"
            if items:
                quiet_since = loop.time()
                continue
            await heard.wait(POLL_INTERVAL)
        if loop.time() - quiet_since >= KEEPALIVE:
            yield ": keep-alive\n\n"
            quiet_since = loop.time()
