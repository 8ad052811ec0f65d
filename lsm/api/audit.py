"""``GET /api/v1/audit``: who did what, when, under which request id.

Admins only: an admin over every environment sees everything (token changes included), an
environment's admin the lines of the environments it administers (``AuditFacade``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from lsm.api.access import Scope, require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.responses import READ, errors
from lsm.schemas.auth import AuditOut, Role

#: query text every backend can compare: no NUL, no control characters
_TEXT = r"^[^\x00-\x1f]*$"

router = APIRouter(
    prefix="/api/v1/audit",
    tags=["audit"],
    dependencies=[require(Role.ADMIN, scope=Scope.SOME)],
    responses=errors(*READ),
)


@router.get("")
def list_audit(
    facades: FacadesDep,
    ctx: ContextDep,
    actor: Annotated[str | None, Query(max_length=200, pattern=_TEXT, description="Only this actor.")] = None,
    action: Annotated[
        str | None,
        Query(
            max_length=50,
            pattern=_TEXT,
            description="Only this action and its sub-actions (`instance`, `setting.set`).",
        ),
    ] = None,
    since: Annotated[datetime | None, Query(description="Only from this time on (ISO 8601).")] = None,
    environment: Annotated[
        str | None,
        Query(max_length=200, pattern=_TEXT, description="Only this environment (name or id)."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> list[AuditOut]:
    """Environment, setting and token changes, instance events and compile requests, newest first."""
    return facades.audit.list_audit(
        ctx, actor=actor, action=action, since=since, environment=environment, limit=limit, offset=offset
    )
