"""Console pages of the deploy: ``/resources`` (the newest version's resources with their deploy
status, last error and attempts; filtered, paged, live) and ``/resources/{id}`` (one resource,
its desired attributes and its action log).

Everything comes from ``DeployFacade`` (``lsm.facade.deploy``), whose list is a keyed page of
the deploy state table: a page costs its rows, whatever the number of resources.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.operations import PAGE_SIZE, enum_param, int_param, ops_page, pager, text_param
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.errors import InvalidInput, UnknownResource
from lsm.schemas.auth import Role
from lsm.schemas.deploy import ResourceOut, ResourceStatus
from lsm.schemas.limits import MAX_REF_LENGTH

router = APIRouter(
    include_in_schema=False, route_class=ConsoleRoute, dependencies=[console_require(Role.VIEWER)]
)

#: actions shown per page of a resource's log
ACTIONS_PAGE = 25


@router.get("/resources")
async def resources(request: Request) -> Response:
    status = enum_param(request, "status", ResourceStatus)
    agent = text_param(request, "agent")
    resource_type = text_param(request, "type")
    offset = int_param(request, "offset", 0)
    facade, ctx = get_facades(request).deploy, context_of(request)
    found = await run_in_threadpool(
        facade.list_resources,
        ctx,
        status=status,
        agent=agent,
        resource_type=resource_type,
        limit=PAGE_SIZE,
        offset=offset,
    )
    counts = await run_in_threadpool(facade.status, ctx)
    return ops_page(
        request,
        "ops_resources.html",
        resources=found,
        status=status.value if status else "",
        agent=agent or "",
        type=resource_type or "",
        statuses=[s.value for s in ResourceStatus],
        counts=counts,
        pages=pager(request, offset, len(found)),
    )


@router.get("/resources/{resource_id:path}")
async def resource(request: Request, resource_id: str) -> Response:
    if len(resource_id) > MAX_REF_LENGTH:
        raise InvalidInput(f"a resource id is at most {MAX_REF_LENGTH} characters", field="resource_id")
    offset = int_param(request, "offset", 0)
    facade, ctx = get_facades(request).deploy, context_of(request)
    actions = await run_in_threadpool(
        facade.resource_actions, ctx, resource_id, limit=ACTIONS_PAGE, offset=offset
    )
    found = await run_in_threadpool(_resource_or_none, request, resource_id)
    return ops_page(
        request,
        "ops_resource.html",
        resource_id=resource_id,
        resource=found,
        actions=actions,
        pages=pager(request, offset, len(actions), ACTIONS_PAGE),
    )


def _resource_or_none(request: Request, resource_id: str) -> ResourceOut | None:
    """The resource's deploy state, or None for one only its action log still knows (purged)."""
    try:
        return get_facades(request).deploy.get_resource(context_of(request), resource_id)
    except UnknownResource:
        return None
