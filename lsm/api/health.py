"""``GET /health``: 200 once the engine is ready, 503 before (load balancers, ``lsm quickstart``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from lsm.api.deps import EngineDep
from lsm.api.errors import error_response

router = APIRouter(tags=["health"])


@router.get("/health", response_model=None)
def health(engine: EngineDep) -> dict[str, Any] | JSONResponse:
    if not engine.ready:
        return error_response(503, "unavailable", "the engine is not ready yet", status="starting")
    return {"status": "ok"}
