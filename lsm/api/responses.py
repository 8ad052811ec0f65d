"""The error answers each route documents in ``/openapi.json``, with the error body schema.

Why in one place: the statuses a route can answer follow from what it takes (an environment
header, a body, a path naming something) and what it does (changes, compiles), not from each
route's author remembering them. Every router passes ``errors(...)`` for its family; the
bodies are those of docs/api.md §2 (``lsm.schemas.errors``).
"""

from __future__ import annotations

from typing import Any

from fastapi import Response
from pydantic import BaseModel

from lsm.schemas.errors import ErrorOut, InvalidInputOut

_DESCRIPTIONS = {
    400: "A rule of the engine is broken, or a model or selector failed.",
    401: "Authentication is on and the request has no valid token.",
    403: "The caller's role in the environment is too low for this route.",
    404: "Unknown environment, entity, instance, version, compile, lifecycle or selector.",
    409: "Stale current_version, no such transfer in this state, or identity value taken.",
    413: "The request body is larger than the server accepts.",
    422: "The request is invalid; errors names each field.",
    429: "Too many event streams open (of this caller, or in all); retry after Retry-After seconds.",
    503: "The engine is not ready, or the request met a lost database connection: retry after Retry-After.",
}

#: what every route that reads the environment may answer (401/403 only when auth is on)
READ = (401, 403, 404, 422, 503)
#: a route with a JSON body
BODY = (*READ, 413)
#: a route that changes something
CHANGE = (*BODY, 400, 409)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route or router answering these error statuses."""
    return {
        status: {
            "model": InvalidInputOut if status == 422 else ErrorOut,
            "description": _DESCRIPTIONS[status],
        }
        for status in sorted(set(statuses))
    }


def model_json(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` as the JSON answer, serialized once.

    Why: a route that returns a model has FastAPI validate it against the response model again
    and then serialize it, a cost paid on every answer; the hottest route (PATCH of an instance,
    hundreds a second under a burst) returns the facade's answer, which already is that model.
    The route keeps ``response_model=`` for its OpenAPI description. The models it is used
    with have no field aliases, so the body is the same as FastAPI's.
    """
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")
