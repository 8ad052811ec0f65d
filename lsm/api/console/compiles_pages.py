"""Console pages ``/compiles`` (the queue and history, live) and ``/compiles/{id}`` (one report).

A report shows what the runner recorded (``lsm.compiler.runner``): the requested and selected
instances (linked to their pages), the compile it was merged into, the version it produced,
its stage timings as bars, and a failed compile's model error (its traceback and full paths only
for an admin who asks, ``?details=1``: ``lsm.api.disclosure``, as for the API). When the
error carries ``location`` (``{file, line, function, source}``: where in the model it was
raised), that source line is shown highlighted, and so is its frame in the traceback. A failed
exporting compile has a retry button for operators (``POST /compiles/{id}/retry``: the API's
retry, then the new request's page).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.forms import read_form
from lsm.api.console.operations import PAGE_SIZE, enum_param, int_param, ops_page, pager
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.api.disclosure import may_see_details, shown_compile, shows_details
from lsm.schemas.auth import Role
from lsm.schemas.compile_reports import CompileOut
from lsm.schemas.compiles import CompileKind, CompileStatus

router = APIRouter(
    include_in_schema=False,
    route_class=ConsoleRoute,
    dependencies=[console_require(Role.VIEWER, write=Role.OPERATOR)],
)


@router.get("/compiles")
async def compiles(request: Request) -> Response:
    """Newest first, filtered by kind and status; the table refreshes when a compile finishes."""
    kind = enum_param(request, "kind", CompileKind)
    status = enum_param(request, "status", CompileStatus)
    offset = int_param(request, "offset", 0)
    details = await run_in_threadpool(shows_details, request)  # may read the caller's environment
    found = await run_in_threadpool(
        get_facades(request).compiles.list_compiles,
        context_of(request),
        limit=PAGE_SIZE,
        offset=offset,
        kind=kind,
        status=status,
    )
    return ops_page(
        request,
        "ops_compiles.html",
        compiles=[shown_compile(request, c, details=details) for c in found],
        kind=kind.value if kind else "",
        status=status.value if status else "",
        kinds=[k.value for k in CompileKind],
        statuses=[s.value for s in CompileStatus],
        pages=pager(request, offset, len(found)),
    )


@router.get("/compiles/{compile_id}")
async def compile_report(request: Request, compile_id: str) -> Response:
    found = await run_in_threadpool(
        get_facades(request).compiles.get_compile, context_of(request), compile_id
    )
    details = await run_in_threadpool(shows_details, request)  # may read the caller's environment
    # the API's disclosure rules (``lsm.api.disclosure``): no traceback, no server path
    may_ask = not details and await run_in_threadpool(may_see_details, request)
    found = shown_compile(request, found, details=details)
    report = found.report or {}
    error = report.get("error") if isinstance(report.get("error"), dict) else None
    return ops_page(
        request,
        "ops_compile.html",
        compile=found,
        report=report,
        timings=stage_timings(report),
        selected=selected_instances(report),
        requested=requested_links(found, report),
        error=error,
        location=error_location(error),
        traceback_lines=traceback_lines(error),
        other={k: v for k, v in report.items() if k not in _SHOWN},
        may_ask_details=may_ask,
        retryable=found.status == CompileStatus.FAILED.value and found.kind != CompileKind.VALIDATION.value,
    )


@router.post("/compiles/{compile_id}/retry")
async def retry(request: Request, compile_id: str) -> Response:
    """Queue a failed exporting compile again; then show the new request."""
    await read_form(request)  # the CSRF check
    queued = await run_in_threadpool(
        get_facades(request).compiles.retry_compile, context_of(request), compile_id
    )
    return RedirectResponse(f"/compiles/{quote(queued.id, safe='')}", status_code=303)


#: report keys the page shows in their own section (the rest goes in a "more" table)
_SHOWN = {"timings", "selected", "error", "merged"}


def stage_timings(report: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{stage, seconds, percent}]`` in the order recorded; percent of the total (or the sum)."""
    raw = report.get("timings")
    if not isinstance(raw, dict):
        return []
    stages = [(str(k), float(v)) for k, v in raw.items() if isinstance(v, int | float)]
    whole = dict(stages).get("total") or sum(v for k, v in stages if k != "total") or 1.0
    return [{"stage": k, "seconds": v, "percent": max(0.5, min(100.0, 100.0 * v / whole))} for k, v in stages]


def selected_instances(report: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{entity, ids, count}]``: the report lists ids (small compiles) or only counts."""
    raw = report.get("selected")
    if not isinstance(raw, dict):
        return []
    found = []
    for entity, value in sorted(raw.items()):
        ids = [str(i) for i in value] if isinstance(value, list) else []
        count = len(ids) if isinstance(value, list) else int(value) if isinstance(value, int) else 0
        found.append({"entity": str(entity), "ids": ids, "count": count})
    return found


def requested_links(found: CompileOut, report: dict[str, Any]) -> list[tuple[str, str | None]]:
    """Each requested id with its entity when the report's selection names it (for a link)."""
    entity_of = {i: s["entity"] for s in selected_instances(report) for i in s["ids"]}
    ids = list(dict.fromkeys([*found.requested_ids, *([found.instance_id] if found.instance_id else [])]))
    return [(i, entity_of.get(i)) for i in ids]


def error_location(error: dict[str, Any] | None) -> dict[str, Any] | None:
    """``error.location`` when it is the ``{file, line, function, source}`` the diagnosis adds."""
    location = error.get("location") if error else None
    if not isinstance(location, dict) or "line" not in location:
        return None
    return location


def traceback_lines(error: dict[str, Any] | None) -> list[tuple[str, bool]]:
    """The traceback's lines, each with whether it is the frame of ``error.location``.

    The location names the file as the report shows it (possibly shortened, relative to the
    model); the traceback has the full path: a frame matches on its line number and a path that
    ends with the location's file.
    """
    text = error.get("traceback") if error else None
    if not isinstance(text, str):
        return []
    location = error_location(error)
    lines = text.rstrip("\n").split("\n")
    if location is None:
        return [(line, False) for line in lines]
    file, number = str(location.get("file") or ""), str(location.get("line"))

    def is_frame(line: str) -> bool:
        found = _FRAME.search(line)
        if found is None or found.group(2) != number or not file:
            return False
        path = found.group(1)
        return path == file or path.endswith("/" + file.lstrip("./")) or file.endswith(path)

    return [(line, is_frame(line)) for line in lines]


#: a frame line of a Python traceback: ``  File "path", line N, in function``
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
