"""``/api/v1/discovered`` and ``POST /lsm/v1/service_inventory/{entity}/adopt``.

Thin like every router: parse, call ``lsm.facade.discovery``, return its view. Resource ids
hold ``[ , = : /``, so ``/api/v1/discovered/{id}`` takes the rest of the path as the id (a
client percent-encodes it; ``/`` may be sent encoded or not).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import Offset
from lsm.api.responses import CHANGE, READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.discovery import AdoptRequest, DiscoveredResourceOut
from lsm.schemas.inventory import InstanceOut

router = APIRouter(
    prefix="/api/v1/discovered",
    tags=["discovery"],
    dependencies=[require(Role.VIEWER)],
    responses=errors(*READ),
)
adopt_router = APIRouter(
    prefix="/lsm/v1/service_inventory",
    tags=["service inventory"],
    dependencies=[require(Role.OPERATOR)],
    responses=errors(*CHANGE),
)


@router.get("")
def list_discovered(
    facades: FacadesDep,
    ctx: ContextDep,
    type: Annotated[str | None, Query(description="Only this resource type, e.g. std::File.")] = None,  # noqa: A002  # the query parameter is named `type` in the API
    agent: Annotated[str | None, Query(description="Only resources of this agent.")] = None,
    managed: Annotated[
        bool | None, Query(description="Only managed (true) or unmanaged (false) ones.")
    ] = None,
    discovered_by: Annotated[
        str | None, Query(description="Only what this discovery resource found.")
    ] = None,
    adopted: Annotated[
        bool | None, Query(description="Only adopted (true) or not adopted (false) ones.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Offset = 0,
) -> list[DiscoveredResourceOut]:
    """Discovered resources of the environment, in resource-id order."""
    return facades.discovery.list_discovered(
        ctx,
        resource_type=type,
        agent=agent,
        managed=managed,
        discovered_by=discovered_by,
        adopted=adopted,
        limit=limit,
        offset=offset,
    )


@router.get("/{resource_id:path}")
def get_discovered(resource_id: str, facades: FacadesDep, ctx: ContextDep) -> DiscoveredResourceOut:
    """One discovered resource, by its resource id."""
    return facades.discovery.get_discovered(ctx, resource_id)


@adopt_router.post("/{entity}/adopt")
def adopt(entity: str, body: AdoptRequest, facades: FacadesDep, ctx: ContextDep) -> list[InstanceOut]:
    """Adopt discovered resources as instances of ``entity``: all of them, or none (409 naming an id
    that is managed or adopted already)."""
    return facades.discovery.adopt(ctx, entity, body.discovered_ids, initial_state=body.initial_state)
