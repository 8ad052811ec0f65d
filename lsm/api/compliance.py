"""``/api/v1/compliance``: ask for a compliance report over a selection, then read it.

Thin like every router: parse, call ``facades.compliance``, return its view. ``POST`` only
stores the report (the agents run it, ``lsm.deploy.compliance``) and answers 202 with its id and
status; ``GET`` answers its status, counts and a page of its rows, a handler's error as
``lsm.api.disclosure.shown_compliance`` lets this caller see it (no server paths).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.disclosure import shown_compliance
from lsm.api.params import Offset
from lsm.api.responses import CHANGE, READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.compliance import ComplianceOutcome, ComplianceReportOut, ComplianceRequest
from lsm.schemas.limits import MAX_PAGE

router = APIRouter(
    prefix="/api/v1/compliance",
    tags=["compliance"],
    dependencies=[require(Role.VIEWER, write=Role.OPERATOR)],
    responses=errors(*READ),
)


@router.post("", status_code=202, responses=errors(*CHANGE))
def request_report(body: ComplianceRequest, facades: FacadesDep, ctx: ContextDep) -> ComplianceReportOut:
    """Check the selected resources' targets against the newest desired state, changing nothing:
    the agents run it; poll ``GET /api/v1/compliance/{id}`` for the result."""
    return facades.compliance.request(ctx, body)


@router.get("")
def list_reports(
    request: Request,
    facades: FacadesDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
) -> list[ComplianceReportOut]:
    """The environment's newest compliance reports (status and counts, no rows), newest first."""
    return [shown_compliance(request, r) for r in facades.compliance.recent(ctx, limit=limit)]


@router.get("/{report_id}")
def get_report(
    request: Request,
    report_id: str,
    facades: FacadesDep,
    ctx: ContextDep,
    outcome: Annotated[ComplianceOutcome | None, Query(description="Only rows with this outcome.")] = None,
    limit: Annotated[int, Query(ge=0, le=MAX_PAGE, description="Rows per page (0: counts only).")] = 100,
    offset: Offset = 0,
) -> ComplianceReportOut:
    """A report: where it stands, its counts per outcome, and a page of its rows in id order."""
    found = facades.compliance.report(ctx, report_id, outcome=outcome, limit=limit, offset=offset)
    return shown_compliance(request, found)
