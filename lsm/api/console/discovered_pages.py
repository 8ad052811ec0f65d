"""Console page ``/discovered``: the resources discovery found (filtered by type, agent, managed),
and for operators an Adopt action per resource (``POST /discovered/adopt``).

Adopting goes through ``DiscoveryFacade.adopt``, the same call as
``POST /lsm/v1/service_inventory/{entity}/adopt``: all its rules stay there. The page only
offers, per resource type, the entities the model declares an adoption into. A refusal is shown
as the engine words it, with its status: 409 for a resource that is managed or already
adopted (naming who adopted it), 422 for an entity that can not adopt it, 404 for an unknown id.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.forms import read_form
from lsm.api.console.operations import PAGE_SIZE, bool_param, int_param, ops_page, pager, text_param
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.errors import InvalidInput
from lsm.schemas.auth import Role
from lsm.schemas.limits import MAX_NAME_LENGTH, MAX_REF_LENGTH

router = APIRouter(
    include_in_schema=False,
    route_class=ConsoleRoute,
    dependencies=[console_require(Role.VIEWER, write=Role.OPERATOR)],
)


@router.get("/discovered")
async def discovered(request: Request) -> Response:
    resource_type = text_param(request, "type")
    agent = text_param(request, "agent")
    managed = bool_param(request, "managed")
    offset = int_param(request, "offset", 0)
    facade, ctx = get_facades(request).discovery, context_of(request)
    found = await run_in_threadpool(
        facade.list_discovered,
        ctx,
        resource_type=resource_type,
        agent=agent,
        managed=managed,
        limit=PAGE_SIZE,
        offset=offset,
    )
    targets = await run_in_threadpool(facade.adoption_targets, ctx)
    return ops_page(
        request,
        "ops_discovered.html",
        resources=found,
        targets=targets,
        type=resource_type or "",
        agent=agent or "",
        managed="" if managed is None else ("true" if managed else "false"),
        pages=pager(request, offset, len(found)),
    )


@router.post("/discovered/adopt")
async def adopt(request: Request) -> Response:
    """Adopt one discovered resource into an entity; then show the new instance."""
    form = await read_form(request)
    resource_id = _field(form, "resource_id", MAX_REF_LENGTH)
    entity = _field(form, "entity", MAX_NAME_LENGTH)
    initial_state = form.get("initial_state") or None
    created = await run_in_threadpool(
        get_facades(request).discovery.adopt,
        context_of(request),
        entity,
        [resource_id],
        initial_state=initial_state,
    )
    target = f"/inventory/{quote(entity, safe='')}/{quote(created[0].id, safe='')}"
    return RedirectResponse(target, status_code=303)


def _field(form: dict[str, str], name: str, max_length: int) -> str:
    value = form.get(name, "").strip()
    if not value:
        raise InvalidInput(f"the form needs {name}", field=name)
    if len(value) > max_length:
        raise InvalidInput(f"{name} is longer than {max_length} characters", field=name)
    return value
