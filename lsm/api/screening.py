"""Strings that no store can hold are refused before any route sees them.

Why: a lone surrogate (``"\\ud800"``, valid as a JSON escape) is not encodable as UTF-8. On
SQLite it used to be stored as JSON text and then break every answer that contained it (every
list of the entity, for good); on PostgreSQL a NUL byte is refused by ``text`` and ``jsonb``
alike and became a 500. Both are refused here, for every string of the request (body, at any
depth and in keys; path parameters; query parameters), with a 422 that names the field. So are
``NaN`` and ``Infinity``, which Python's JSON parser accepts but no JSON answer can carry and
PostgreSQL's ``jsonb`` refuses.

``screen_request`` is an application-wide dependency (``create_app``): FastAPI has already
parsed the JSON body (``request.json()`` is cached), so the body is walked once, without
recursion, whatever its depth, and only when its raw text could hold such a value at all
(JSON can only spell a NUL or a surrogate as a ``\\u`` escape, and NaN/Infinity by name): most
bodies are let through after one scan of their bytes.
"""

from __future__ import annotations

import math
import re
from typing import Any

from fastapi import Request

from lsm.api.disclosure import printable
from lsm.errors import InvalidInput

#: the most problems one answer lists (a body may hold thousands)
MAX_LISTED = 100

#: what a JSON text must contain to hold a NUL, a surrogate or a non-finite number (or more)
_SUSPECT = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])|NaN|Infinity")


def may_hold_problems(raw: bytes) -> bool:
    """Whether a JSON body could hold a bad value: only a UTF-8 text without NUL bytes and
    without a suspect escape or name is surely clean (Python's parser also reads UTF-16 and
    UTF-32, and lets surrogates encoded as bytes through)."""
    if b"\x00" in raw:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return _SUSPECT.search(raw) is not None


def string_problem(value: str) -> str | None:
    """Why ``value`` can not be stored, or ``None`` when it can."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return None


def body_problems(body: Any) -> list[dict[str, str]]:
    """``[{"path", "in", "reason"}]`` for every bad string (value or key) of a JSON body."""
    problems: list[dict[str, str]] = []
    stack: list[tuple[str, Any]] = [("", body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            reason = string_problem(value)
            if reason is not None:
                problems.append({"path": path or "<body>", "in": "body", "reason": reason})
        elif isinstance(value, dict):
            for key, item in value.items():
                name = printable(str(key))
                where = f"{path}.{name}" if path else name
                reason = string_problem(str(key))
                if reason is not None:
                    problems.append({"path": where, "in": "body", "reason": f"the key {reason}"})
                stack.append((where, item))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append({"path": path or "<body>", "in": "body", "reason": "not a finite number"})
        elif isinstance(value, list):
            stack.extend((f"{path}.{i}" if path else str(i), item) for i, item in enumerate(value))
    problems.sort(key=lambda p: p["path"])
    return problems


async def screen_request(request: Request) -> None:
    """Refuse (422 ``invalid_input``) a request with a string that can not be stored."""
    problems = [
        {"path": printable(name), "in": "path", "reason": reason}
        for name, value in request.path_params.items()
        if isinstance(value, str) and (reason := string_problem(value)) is not None
    ]
    problems += [
        {"path": printable(name), "in": "query", "reason": reason}
        for name, value in request.query_params.multi_items()
        if (reason := string_problem(name) or string_problem(value)) is not None
    ]
    raw = await request.body()
    if raw and may_hold_problems(raw):
        try:
            body = await request.json()  # parsed by FastAPI already: cached on the request
        except ValueError:
            body = None  # not JSON: the route's own validation answers it
        problems += body_problems(body)
    refuse(problems)


def screen_form(fields: dict[str, str]) -> None:
    """Refuse (422 ``invalid_input``) a console form with a field that can not be stored.

    Why apart from ``screen_request``: a form's NUL is spelled ``%00`` in the raw body, which
    the JSON scan does not read; the console parses its forms itself (``lsm.api.console.forms``)
    and calls this on the fields, so that a form post is screened exactly like an API body."""
    refuse([{**p, "in": "form"} for p in body_problems(fields)])


def refuse(problems: list[dict[str, str]]) -> None:
    """Raise the one 422 that lists ``problems`` (``[{"path", "in", "reason"}]``), if any."""
    if problems:
        where = "; ".join(f"{p['in']}.{p['path']}: {p['reason']}" for p in problems[:10])
        raise InvalidInput(
            f"invalid request: {where}", errors=problems[:MAX_LISTED], error_count=len(problems)
        )
