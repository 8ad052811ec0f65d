"""What an answer may tell about the server: no tracebacks, no absolute server paths.

Why: error bodies and compile reports are read by any caller, and a traceback or a path such
as ``/srv/lsm/venv/lib/.../models/net.py`` tells an attacker how the server is laid out. The
server log keeps everything; answers get a redacted copy. A model's own ``file:line`` stays
useful without its directory: paths are cut to their last two parts (``net/__init__.py:12``).

A caller may ask for the details with ``X-LSM-Debug: 1`` (a console page: ``?details=1``, a
browser's link cannot send a header); it gets them only when ``may_see_details`` says so: an
authenticated admin.

The ``shown_*`` functions are the one place that decides what an answer about a compile, an
event line, a diagnosis or a compliance report may carry: the API's routes and the console's
pages both call them, so a page never shows what the route behind it would hide.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import HTTPConnection

from lsm.schemas.auth import Role
from lsm.schemas.compile_reports import CompileOut
from lsm.schemas.compliance import ComplianceReportOut
from lsm.schemas.inventory import DiagnosisOut, EventOut

#: the request header with which a caller asks for tracebacks and full paths
DEBUG_HEADER = "X-LSM-Debug"
#: keys that hold a traceback in error bodies and compile reports
TRACEBACK_KEYS = frozenset({"traceback"})

#: an absolute POSIX path of at least two parts (a URL's path is only matched after a scheme)
#: (not after ``=``: ``path=/etc/motd`` in a resource id is the caller's data, not the server's)
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/~=-])/(?:[\w.@+~-]+/)+[\w.@+~-]+")


#: the query parameter with which a console page asks for the details (a link cannot send headers)
DETAILS_PARAM = "details"


def asked_for_details(request: HTTPConnection) -> bool:
    """Whether the caller sent ``X-LSM-Debug: 1`` (or ``?details=1``)."""
    return (
        request.headers.get(DEBUG_HEADER, "").strip() == "1"
        or request.query_params.get(DETAILS_PARAM, "").strip() == "1"
    )


def may_see_details(request: HTTPConnection) -> bool:
    """Whether this caller may see tracebacks and server paths (when it asked for them): an
    authenticated admin of the request's environment (or of every one).

    With authentication off nobody may: every caller is then ``local``, whoever reaches the
    port, so "admin" proves nothing. A request refused before its caller was resolved (a bad
    header, a screened body) is answered without details too.
    """
    context = getattr(request.state, "authenticated", None)
    if context is None:
        return False
    role = context.role_in(context.environment or "", None)
    return role is not None and role.allows(Role.ADMIN)


def shows_details(request: HTTPConnection) -> bool:
    """Details are shown only to a caller who asked for them and may see them."""
    return asked_for_details(request) and may_see_details(request)


def short_path(match: re.Match[str]) -> str:
    parts = match.group(0).rsplit("/", 2)
    return "/".join(parts[-2:])


def redact_text(text: str) -> str:
    """``text`` with every absolute path cut to its last two parts."""
    return _ABSOLUTE_PATH.sub(short_path, text)


def printable(text: str) -> str:
    """``text`` safe to echo in an answer: lone surrogates and NULs escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


def printable_errors(errors: list[dict[str, str]]) -> list[dict[str, str]]:
    """Error entries whose strings can be encoded (a field name may hold a lone surrogate)."""
    return [{k: printable(v) for k, v in e.items()} for e in errors]


def without_tracebacks(value: Any) -> Any:
    """A copy of JSON-like ``value`` without traceback keys (anything else unchanged)."""
    if isinstance(value, dict):
        return {k: without_tracebacks(v) for k, v in value.items() if k not in TRACEBACK_KEYS}
    if isinstance(value, list | tuple):
        return [without_tracebacks(v) for v in value]
    return value


def redact_report(report: dict[str, Any]) -> dict[str, Any]:
    """A compile report as any caller may see it: no tracebacks, no server path in its error.

    Only the error is scanned for paths: the rest (selected instances, resource ids) is the
    caller's own data, where a ``/`` means what the caller meant.
    """
    out = without_tracebacks(report)
    if "error" in out:
        out["error"] = redact(out["error"])
    return dict(out)


def redact(value: Any) -> Any:
    """A copy of JSON-like ``value`` without traceback keys and with paths shortened."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items() if k not in TRACEBACK_KEYS}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def shown_compile(
    request: HTTPConnection, compile_out: CompileOut, *, details: bool | None = None
) -> CompileOut:
    """A compile as this caller may see it: its report redacted unless details are shown
    (``details``: ``shows_details(request)`` when the caller already knows it)."""
    if shows_details(request) if details is None else details:
        return compile_out
    return compile_out.model_copy(update={"report": redact_report(compile_out.report)})


def shown_event(request: HTTPConnection, event: EventOut, *, details: bool | None = None) -> EventOut:
    """An event line as this caller may see it: a failure's message names no server path."""
    if not event.is_error or (shows_details(request) if details is None else details):
        return event
    return event.model_copy(update={"message": redact_text(event.message)})


def shown_compliance(
    request: HTTPConnection, report: ComplianceReportOut, *, details: bool | None = None
) -> ComplianceReportOut:
    """A compliance report as this caller may see it: a handler's read error (and the report's
    own failure) names no server path; the differences are the resources' own data."""
    if shows_details(request) if details is None else details:
        return report
    rows = [
        row if row.error is None else row.model_copy(update={"error": redact_text(row.error)})
        for row in report.resources
    ]
    error = None if report.error is None else redact_text(report.error)
    return report.model_copy(update={"resources": rows, "error": error})


def shown_diagnosis(
    request: HTTPConnection, out: DiagnosisOut, *, details: bool | None = None
) -> DiagnosisOut:
    """A diagnosis as this caller may see it: handler errors and model locations in its causes
    may name server paths; its last error and compiles go through ``shown_event`` and
    ``shown_compile``."""
    validation, pending = out.validation_compile, out.pending_compile
    details = shows_details(request) if details is None else details
    if not details:
        out = out.model_copy(
            update={
                "cause": [
                    c.model_copy(update={"message": redact_text(c.message), "details": redact(c.details)})
                    for c in out.cause
                ],
                "summary": redact_text(out.summary),
            }
        )
    return out.model_copy(
        update={
            "last_error": None
            if out.last_error is None
            else shown_event(request, out.last_error, details=details),
            "validation_compile": None
            if validation is None
            else shown_compile(request, validation, details=details),
            "pending_compile": None if pending is None else shown_compile(request, pending, details=details),
        }
    )
