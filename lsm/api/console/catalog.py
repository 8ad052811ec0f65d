"""Console pages: the overview (``/``), the catalog (``/catalog``) and one entity (``/catalog/{entity}``).

An entity's page lists its attributes with their modifiers and draws its lifecycle
(``lsm.api.console.drawing``). Read-only: the viewer role is enough.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.drawing import lifecycle_svg
from lsm.api.console.render import page
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.graph.builders import LABEL_COLOURS, TRIGGER_COLOURS
from lsm.schemas.auth import Role

router = APIRouter(
    include_in_schema=False, route_class=ConsoleRoute, dependencies=[console_require(Role.VIEWER)]
)


@router.get("/")
def overview(request: Request) -> Response:
    """Every entity with its instance count per state: where to start."""
    entities = get_facades(request).catalog.list_entities(context_of(request))
    return page(request, "overview.html", entities=entities)


@router.get("/catalog")
def catalog(request: Request) -> Response:
    entities = get_facades(request).catalog.list_entities(context_of(request), summary=False)
    return page(request, "catalog.html", entities=entities)


@router.get("/catalog/{entity}")
async def entity(request: Request, entity: str) -> Response:
    facades, ctx = get_facades(request), context_of(request)
    found = await run_in_threadpool(facades.catalog.get_entity, ctx, entity)
    svg = await run_in_threadpool(lifecycle_svg, facades, ctx, found.lifecycle.name)
    return page(
        request,
        "entity.html",
        entity=found,
        lifecycle_svg=svg,
        trigger_colours=TRIGGER_COLOURS,
        label_colours=LABEL_COLOURS,
    )
