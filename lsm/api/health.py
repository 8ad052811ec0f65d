"""``GET /health``: 200 once the engine is ready, 503 before (load balancers, ``lsm quickstart``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from lsm.api.access import public
from lsm.api.deps import PublicContextDep, is_ready
from lsm.api.errors import error_response
from lsm.api.responses import errors
from lsm.schemas.health import HealthOut

router = APIRouter(tags=["health"], dependencies=[public()], responses=errors(422, 503))


@router.get("/health", response_model=None)
def health(ready: Annotated[bool, Depends(is_ready)], _ctx: PublicContextDep) -> HealthOut | JSONResponse:
    if not ready:
        return error_response(503, "unavailable", "the engine is not ready yet", status="starting")
    return HealthOut(status="ok")
