"""Log in, log out, pick an environment, and the console's static files.

Login takes an API token, checks it with the API's ``Authenticator`` (the same tokens, the same
refusal for unknown, expired and revoked ones), opens a console session bound to it and stores
the session's id in the cookie (``lsm.api.console.session``). Logout deletes the session and
clears the cookie. The environment switcher stores the
chosen environment in a cookie; which environments a caller may use is still decided per
request by the role checks.
"""

from __future__ import annotations

from typing import Annotated, cast
from urllib.parse import urlsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.access import Scope, public
from lsm.api.auth import Authenticator
from lsm.api.console.forms import read_form
from lsm.api.console.render import bare_page, package_dir, secure, set_session_cookie
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import ENVIRONMENT_COOKIE, SESSION_COOKIE, console_require, session_value
from lsm.errors import Unauthenticated
from lsm.schemas.auth import Role

router = APIRouter(include_in_schema=False, route_class=ConsoleRoute)

#: the console's static files and their media types (nothing else is served from the package)
STATIC = {
    "console.css": "text/css; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
}


def local_path(value: str | None) -> str:
    """``value`` when it is a path of this site (no scheme, no host, no ``//``), else ``/``."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc else "/"


@router.get("/login", dependencies=[public()])
def login_form(request: Request, target: Annotated[str, Query(alias="next")] = "/") -> Response:
    """The login form (with authentication off there is nothing to log in to: go to the console)."""
    if not cast(Authenticator, request.app.state.authenticator).enabled:
        return RedirectResponse(local_path(target), status_code=303)
    return bare_page(request, "login.html", next=local_path(target), message=None)


@router.post("/login", dependencies=[public()])
async def login(request: Request) -> Response:
    """Check the token; on success keep it in the session cookie and go where the user was going."""
    fields = await read_form(request)
    authenticator = cast(Authenticator, request.app.state.authenticator)
    target = local_path(fields.get("next"))
    if not authenticator.enabled:
        return RedirectResponse(target, status_code=303)
    token = fields.get("token", "").strip()
    try:  # reads and writes the database: not on the event loop
        session_id = await run_in_threadpool(authenticator.open_session, token)
    except Unauthenticated as exc:
        return bare_page(request, "login.html", status_code=401, next=target, message=str(exc))
    response = RedirectResponse(target, status_code=303)
    set_session_cookie(response, request, session_id)
    return response


@router.post("/logout", dependencies=[public()])
async def logout(request: Request) -> Response:
    """End the session and forget its cookie (CSRF-checked: a cross-site page cannot log a user
    out). The session is deleted: its cookie, kept or copied, opens nothing any more."""
    await read_form(request)
    authenticator = cast(Authenticator, request.app.state.authenticator)
    cookie = session_value(request)
    if authenticator.enabled and cookie is not None:
        await run_in_threadpool(authenticator.close_session, cookie)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", secure=secure(request), httponly=True, samesite="strict")
    return response


@router.get("/environment", dependencies=[console_require(Role.VIEWER, scope=Scope.SOME)])
def switch_environment(
    request: Request, name: str, target: Annotated[str, Query(alias="next")] = "/"
) -> Response:
    """Remember ``name`` as this browser's environment; pages refuse it if the caller may not see it."""
    response = RedirectResponse(local_path(target), status_code=303)
    response.set_cookie(
        ENVIRONMENT_COOKIE, name[:200], httponly=True, samesite="strict", secure=secure(request), path="/"
    )
    return response


@router.get("/static/{name}", dependencies=[public()])
def static(name: str) -> Response:
    """A file of ``lsm/api/console/static`` named in ``STATIC`` (package data, no CDN)."""
    media = STATIC.get(name)
    if media is None:
        return Response("not found", status_code=404, media_type="text/plain")
    body = package_dir("static").joinpath(name).read_bytes()
    return Response(body, media_type=media, headers={"Cache-Control": "no-cache"})
