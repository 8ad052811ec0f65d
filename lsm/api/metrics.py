"""``GET /metrics``: the Prometheus scrape of the whole system (text exposition format 0.0.4).

Thin like every router: the numbers come from the database through ``facades.metrics``, so a
scrape of any API process shows every worker's compiles and every agent's deploys. Metrics
span every environment, so the caller needs the viewer role over all of them (a Prometheus
``bearer_token`` of a ``*`` viewer token when authentication is on).

A plain ``def``: FastAPI runs it in its threadpool, so the scrape's queries never block the
event loop.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from lsm.api.access import Scope, require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.responses import READ, errors
from lsm.facade.metrics import CONTENT_TYPE
from lsm.schemas.auth import Role

router = APIRouter(
    tags=["metrics"],
    dependencies=[require(Role.VIEWER, scope=Scope.GLOBAL)],
    responses=errors(*READ),
)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text exposition format."}},
)
def metrics(facades: FacadesDep, ctx: ContextDep) -> Response:
    """Queue depth and age, compiles and their stage times, instances per state, resources per
    deploy status, deploy actions and failures per agent and type, agents, webhook failures."""
    return Response(content=facades.metrics.exposition(ctx), media_type=CONTENT_TYPE)
