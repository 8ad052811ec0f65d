"""``/api/v1/resources`` and ``/api/v1/deploy``: resources, their action log, deploy and dry run.

Thin like every router: parse, call ``facades.deploy``, return its view. A resource id holds
``[``, ``,``, ``=``, ``:`` and, for files, ``/`` (``std::File[h1,path=/etc/motd]``): the routes
take it as a ``path`` parameter. The actions route is declared first; no id can be mistaken
for it, since a resource id always ends with ``]``.

The routes are plain ``def``: FastAPI runs them in its threadpool, so a dry run (which calls the
handlers' ``read``) never blocks the event loop.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import Offset
from lsm.api.responses import CHANGE, READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.deploy import (
    DeployRequest,
    DeployResult,
    DeployStatusOut,
    ResourceActionOut,
    ResourceOut,
    ResourceStatus,
)
from lsm.schemas.limits import MAX_PAGE

router = APIRouter(
    prefix="/api/v1",
    tags=["deploy"],
    dependencies=[require(Role.VIEWER, write=Role.OPERATOR)],
    responses=errors(*READ),
)


@router.get("/resources")
def list_resources(
    facades: FacadesDep,
    ctx: ContextDep,
    agent: Annotated[str | None, Query(description="Only this agent's resources.")] = None,
    status: Annotated[ResourceStatus | None, Query(description="Only resources with this status.")] = None,
    resource_type: Annotated[
        str | None, Query(alias="type", description="Only resources of this type (e.g. std::File).")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    offset: Offset = 0,
) -> list[ResourceOut]:
    """The newest version's resources and where their deploy stands, in id order."""
    return facades.deploy.list_resources(
        ctx, agent=agent, status=status, resource_type=resource_type, limit=limit, offset=offset
    )


@router.get("/resources/{resource_id:path}/actions")
def resource_actions(
    resource_id: str,
    facades: FacadesDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Offset = 0,
) -> list[ResourceActionOut]:
    """The resource's action log, newest first (deploys and dry runs)."""
    return facades.deploy.resource_actions(ctx, resource_id, limit=limit, offset=offset)


@router.get("/resources/{resource_id:path}")
def get_resource(resource_id: str, facades: FacadesDep, ctx: ContextDep) -> ResourceOut:
    """One resource, with its desired attributes in the newest version."""
    return facades.deploy.get_resource(ctx, resource_id)


@router.get("/deploy")
def deploy_status(
    facades: FacadesDep,
    ctx: ContextDep,
    agent: Annotated[list[str] | None, Query(description="Only these agents (repeatable).")] = None,
) -> DeployStatusOut:
    """Where the deploy stands: the environment's resources counted by status."""
    return facades.deploy.status(ctx, agents=agent or None)


@router.post("/deploy", responses=errors(*CHANGE))
def deploy(body: DeployRequest, facades: FacadesDep, ctx: ContextDep) -> DeployResult:
    """Deploy the newest version (failed and skipped resources again; every one with ``repair``),
    or with ``dry_run`` report per resource what a deploy would change, reading only."""
    return facades.deploy.deploy(ctx, body)
