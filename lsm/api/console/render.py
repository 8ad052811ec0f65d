"""``page()``: a console template rendered with the layout's data (nav, environments, caller, CSRF).

Why one helper: every page shows the same navigation, environment switcher and caller, and every
form needs the CSRF token; a page only supplies its own data. Templates and static files are
package data (``lsm/api/console/templates``, ``.../static``) found through ``importlib.resources``
so that a wheel install serves them (no CDN, no build step). Autoescaping is on for every
template: instance attributes are client input.
"""

from __future__ import annotations

import json
import secrets
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any, cast

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FunctionLoader, select_autoescape

from lsm.api.auth import Authenticator
from lsm.api.console.session import (
    CSRF_FIELD,
    ENVIRONMENT_COOKIE,
    SESSION_COOKIE,
    context_of,
    csrf_token,
    may_act,
    session_value,
)
from lsm.api.deps import get_facades
from lsm.facade import RequestContext

#: the navigation of every page: (label, path); the last five pages are lsm.api.console.operations
NAV = (
    ("Catalog", "/catalog"),
    ("Inventory", "/inventory"),
    ("Compiles", "/compiles"),
    ("Desired state", "/desired-state"),
    ("Resources", "/resources"),
    ("Compliance", "/compliance"),
    ("Discovered", "/discovered"),
)


def package_dir(name: str) -> Traversable:
    """``templates`` or ``static`` of the console package, wherever the package is installed."""
    return files("lsm.api.console").joinpath(name)


def _load(name: str) -> str | None:
    found = package_dir("templates").joinpath(name)
    return found.read_text(encoding="utf-8") if found.is_file() else None


@cache
def templates() -> Environment:
    env = Environment(
        loader=FunctionLoader(_load),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, sort_keys=True, default=str)
    env.filters["compact"] = lambda value: json.dumps(value, sort_keys=True, default=str)
    return env


def secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session_cookie(response: Any, request: Request, value: str) -> None:
    response.set_cookie(
        SESSION_COOKIE, value, httponly=True, samesite="strict", secure=secure(request), path="/"
    )


def layout(request: Request, ctx: RequestContext) -> dict[str, Any]:
    """What base.html needs: nav, environments the caller sees, the current one, caller, CSRF."""
    facades = get_facades(request)
    environments = [e.name for e in facades.environments.list_environments(ctx)]
    found = facades.environments.identify(ctx.environment)
    authenticator = cast(Authenticator, request.app.state.authenticator)
    return {
        "nav": NAV,
        "path": request.url.path,
        "environments": environments,
        "environment": found[1] if found is not None else (ctx.environment or facades.environments.default),
        "actor": ctx.actor,
        "auth": authenticator.enabled,
        "csrf_field": CSRF_FIELD,
        "may_act": may_act(request),
        # the banner of a halted environment or paused agents (base.html), on every page
        "brake": facades.halts.state(ctx.in_environment(found[0])) if found is not None else None,
    }


def _canonical(request: Request) -> str | None:
    """The URL a live page refetches: itself for a GET (a page answering a POST names its own)."""
    if request.method != "GET":
        return None
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def page(request: Request, template: str, status_code: int = 200, **data: Any) -> HTMLResponse:
    """Render ``template`` inside the layout for the caller of ``request``.

    Sets a session nonce cookie when the browser has none (authentication off), so that its
    forms carry a CSRF token bound to it.
    """
    session = session_value(request)
    fresh = None
    if session is None:
        fresh = secrets.token_urlsafe(32)
    values = {**layout(request, context_of(request)), "canonical": _canonical(request), **data}
    values["csrf"] = csrf_token(request, fresh)
    response = HTMLResponse(templates().get_template(template).render(values), status_code=status_code)
    if fresh is not None:
        set_session_cookie(response, request, fresh)
    return response


def bare_page(request: Request, template: str, status_code: int = 200, **data: Any) -> HTMLResponse:
    """A page without a resolved caller (login, errors before authentication)."""
    session = session_value(request)
    fresh = secrets.token_urlsafe(32) if session is None else None
    authenticator = cast(Authenticator, request.app.state.authenticator)
    values = {
        "nav": (),
        "path": request.url.path,
        "environments": [],
        "environment": request.cookies.get(ENVIRONMENT_COOKIE) or "",
        "actor": None,
        "auth": authenticator.enabled,
        "csrf_field": CSRF_FIELD,
        "may_act": False,
        "csrf": csrf_token(request, fresh),
        **data,
    }
    response = HTMLResponse(templates().get_template(template).render(values), status_code=status_code)
    if fresh is not None:
        set_session_cookie(response, request, fresh)
    return response
