"""Console pages of compliance reports: ``/compliance`` (the newest reports, and a form that asks
for one over a selection) and ``/compliance/{id}`` (where it stands, its counts, its rows by
outcome, paged; live while the agents run it).

Everything comes from ``ComplianceFacade`` (``lsm.facade.compliance``); what a row's error may
show goes through ``lsm.api.disclosure.shown_compliance``, as for ``GET /api/v1/compliance/{id}``.
Asking for a report is an operator's form post (CSRF-checked) and redirects to its page.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.forms import read_form
from lsm.api.console.operations import PAGE_SIZE, enum_param, int_param, ops_page, pager
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.api.disclosure import shown_compliance, shows_details
from lsm.errors import InvalidInput
from lsm.schemas.auth import Role
from lsm.schemas.compliance import ComplianceOutcome, ComplianceRequest
from lsm.schemas.limits import MAX_ID_LENGTH

router = APIRouter(
    include_in_schema=False,
    route_class=ConsoleRoute,
    dependencies=[console_require(Role.VIEWER, write=Role.OPERATOR)],
)

#: the selection fields of the form, each a comma-separated list (empty: not narrowed)
FIELDS = ("agents", "types", "sets", "instances")


@router.get("/compliance")
async def reports(request: Request) -> Response:
    facade, ctx = get_facades(request).compliance, context_of(request)
    found = await run_in_threadpool(facade.recent, ctx, limit=PAGE_SIZE)
    details = shows_details(request)
    return ops_page(
        request,
        "ops_compliance_list.html",
        reports=[shown_compliance(request, r, details=details) for r in found],
        outcomes=[o.value for o in ComplianceOutcome],
    )


@router.post("/compliance")
async def ask(request: Request) -> Response:
    """Ask the agents for a report over the form's selection; then show it."""
    form = await read_form(request)
    selection = {
        field: [v.strip() for v in form[field].split(",") if v.strip()]
        for field in FIELDS
        if form.get(field, "").strip()
    }
    asked = await run_in_threadpool(
        get_facades(request).compliance.request, context_of(request), ComplianceRequest(**selection)
    )
    return RedirectResponse(f"/compliance/{quote(asked.id, safe='')}", status_code=303)


@router.get("/compliance/{report_id}")
async def report(request: Request, report_id: str) -> Response:
    if len(report_id) > MAX_ID_LENGTH:
        raise InvalidInput(f"a report id is at most {MAX_ID_LENGTH} characters", field="report_id")
    outcome = enum_param(request, "outcome", ComplianceOutcome)
    offset = int_param(request, "offset", 0)
    found = await run_in_threadpool(
        get_facades(request).compliance.report,
        context_of(request),
        report_id,
        outcome=outcome,
        limit=PAGE_SIZE,
        offset=offset,
    )
    return ops_page(
        request,
        "ops_compliance.html",
        report=shown_compliance(request, found),
        outcome=outcome.value if outcome else "",
        outcomes=[o.value for o in ComplianceOutcome],
        pages=pager(request, offset, len(found.resources)),
    )
