"""Error answers back into ``lsm.errors`` exceptions.

The server answers every error as ``{"error": kind, "message": ..., **details}`` (see
``lsm.api.errors``); the client raises the class registered for ``kind`` with the same message
and details, so that ``except VersionConflict`` works the same in-process and over HTTP. An
unknown kind (a newer server) falls back to the class of its status family; a body that is not
ours (a proxy's 502 page) to ``LsmError`` with the status and the start of the text.
"""

from __future__ import annotations

from typing import Any

import httpx

from lsm.errors import (
    ERRORS_BY_KIND,
    Conflict,
    InvalidAttributes,
    InvalidInput,
    LsmError,
    NotFound,
    RuleViolation,
)

_BY_STATUS: dict[int, type[LsmError]] = {
    400: RuleViolation,
    404: NotFound,
    409: Conflict,
    422: InvalidInput,
}


def error_class(kind: str | None, status: int) -> type[LsmError]:
    """The exception class for an error ``kind`` answered with ``status``."""
    if kind is not None and kind in ERRORS_BY_KIND:
        return ERRORS_BY_KIND[kind]
    return _BY_STATUS.get(status, LsmError)


def error_from_response(response: httpx.Response) -> LsmError:
    """The exception that an error ``response`` (status >= 400) stands for."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    status = response.status_code
    if isinstance(body, dict) and isinstance(body.get("error"), str) and isinstance(body.get("message"), str):
        details = {k: v for k, v in body.items() if k not in ("error", "message")}
        return make_error(error_class(body["error"], status), body["message"], details)
    request = response.request
    text = response.text.strip()[:200]
    return error_class(None, status)(
        f"HTTP {status} from {request.method} {request.url}: {text or response.reason_phrase}",
        status_code=status,
    )


def make_error(cls: type[LsmError], message: str, details: dict[str, Any]) -> LsmError:
    """Build ``cls`` from a body's message and details, whatever its constructor looks like."""
    if issubclass(cls, InvalidAttributes):
        details = dict(details)
        errors = details.pop("errors", None)
        return cls(errors if isinstance(errors, list) else [], message, **details)
    return cls(message, **details)
