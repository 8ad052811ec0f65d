"""The console's operations pages: compiles, desired state, resources, discovered (docs/console.md §4).

Why a module of their own: these pages read what the engine did (compiles, versions, deploy,
discovery) rather than what an operator ordered (catalog, inventory), and they are built apart
from the rest of the console. This module holds what the four share -- reading a query
parameter into a typed value (a bad one is an ``InvalidInput`` naming it, shown as a 422 page,
never a 500), paging and rendering in the console's layout.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from fastapi import Request
from fastapi.responses import HTMLResponse

from lsm.api.console.render import page
from lsm.errors import InvalidInput
from lsm.schemas.limits import MAX_INT, MAX_NAME_LENGTH

E = TypeVar("E", bound=StrEnum)

#: rows per page of every operations list
PAGE_SIZE = 50


def int_param(request: Request, name: str, default: int, *, low: int = 0, high: int = MAX_INT) -> int:
    """Query parameter ``name`` as an int in ``[low, high]``; ``InvalidInput`` naming it otherwise."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw[:40]!r}", field=name) from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}, not {value}", field=name)
    return value


def enum_param(request: Request, name: str, kind: type[E]) -> E | None:
    """Query parameter ``name`` as one of ``kind``'s values (empty: no filter)."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        allowed = ", ".join(v.value for v in kind)
        raise InvalidInput(f"{name} must be one of {allowed}, not {raw[:40]!r}", field=name) from None


def text_param(request: Request, name: str, *, max_length: int = MAX_NAME_LENGTH) -> str | None:
    """Query parameter ``name`` as a bounded string (empty: no filter)."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    if len(raw) > max_length:
        raise InvalidInput(f"{name} is longer than {max_length} characters", field=name)
    return raw


def bool_param(request: Request, name: str) -> bool | None:
    """``true``/``false`` (empty: no filter)."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    if raw not in ("true", "false"):
        raise InvalidInput(f"{name} must be true or false, not {raw[:40]!r}", field=name)
    return raw == "true"


def ops_page(request: Request, template: str, **data: Any) -> HTMLResponse:
    """The page in the console's layout. Its live regions (``id`` + ``data-live``) are refetched
    by ``console.js`` from the page's own URL when an event concerns them."""
    return page(request, template, **data)


def pager(request: Request, offset: int, shown: int, limit: int = PAGE_SIZE) -> dict[str, str | None]:
    """Links to the previous and next page, keeping the other query parameters."""

    def link(at: int) -> str:
        url = request.url.include_query_params(offset=at)
        return f"{url.path}?{url.query}"

    return {
        "previous": link(max(offset - limit, 0)) if offset > 0 else None,
        "next": link(offset + limit) if shown >= limit else None,
    }


__all__ = [
    "PAGE_SIZE",
    "bool_param",
    "enum_param",
    "int_param",
    "ops_page",
    "pager",
    "text_param",
]
