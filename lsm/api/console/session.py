"""Who a console request is from, and the CSRF check of the console's state-changing requests.

Why a second way in: a browser cannot send ``Authorization: Bearer`` on a link, a form post or
an ``EventSource``. So the login page (``lsm.api.console.login``) takes an API token (the same
tokens, checked by the same ``lsm.api.auth.Authenticator``), opens a console session bound to
it (``lsm.store.auth.sessions``: a random id stored hashed, with an expiry) and stores the
session's id, never the token, in the HttpOnly, SameSite=Strict cookie ``lsm_session`` (Secure
over https). Logging out deletes the session; revoking the token deletes its sessions. Every
console route resolves its caller from that cookie (a session that is unknown, expired, ended
or whose token is no longer valid is a 401), or from a bearer header when a script sends one,
and declares its role
with ``console_require`` -- an ``lsm.api.access.Access`` checked by the same ``check()`` as the
API's routes, so ``tests/auth/test_roles.py`` walks the console too.

CSRF: a state-changing console request must carry ``csrf_token`` (form field) or
``X-CSRF-Token`` (header) equal to HMAC-SHA256(app secret, session cookie). A cross-site form
post carries neither the cookie (SameSite=Strict) nor the token, so it fails -- also with
authentication off, where the cookie is a random nonce set by the first page. A request
authenticated by an ``Authorization`` header is exempt: a cross-site page cannot send that
header without a CORS preflight, which this server never grants.

What it must not do: decide what a role allows (``lsm.api.access``) or how a token is checked
(``lsm.api.auth``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any, cast

from fastapi import Depends, Request

from lsm.api.access import Access, Scope, check
from lsm.api.auth import Authenticator
from lsm.api.deps import get_facades, is_ready, valid_request_id
from lsm.errors import Forbidden, LsmError, Unauthenticated
from lsm.facade import RequestContext, new_request_id
from lsm.schemas.auth import Role

SESSION_COOKIE = "lsm_session"
ENVIRONMENT_COOKIE = "lsm_env"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
#: the longest cookie value considered (a token or a JWT); longer ones are ignored
MAX_COOKIE = 4096


class ConsoleDenied(Exception):
    """A console request refused before its page: rendered as an HTML page (login form on 401)."""

    def __init__(self, error: LsmError) -> None:
        super().__init__(str(error))
        self.error = error


class ConsoleUnavailable(Exception):
    """The runtime is not started: a 503 page."""


def new_secret() -> bytes:
    """The key of the CSRF tokens of one app (per process: see docs/console.md, several API processes)."""
    return secrets.token_bytes(32)


def session_value(request: Request) -> str | None:
    value = request.cookies.get(SESSION_COOKIE)
    return value if value and len(value) <= MAX_COOKIE and value.isascii() else None


def bearer_credential(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def csrf_token(request: Request, session: str | None = None) -> str:
    """The CSRF token of the request's session (``session``: a cookie value set in this response)."""
    value = session if session is not None else (session_value(request) or "")
    secret = cast(bytes, request.app.state.console_secret)
    return hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()


def csrf_ok(request: Request, sent: str | None) -> bool:
    """Whether a state-changing request may proceed (see the module docstring)."""
    if bearer_credential(request) is not None:
        return True
    if session_value(request) is None or not sent:
        return False
    return hmac.compare_digest(csrf_token(request), sent)


def console_context(request: Request) -> RequestContext:
    """The caller of a console request: bearer header, else the session cookie (``ConsoleDenied``)."""
    request_id = valid_request_id(request.headers.get("x-request-id")) or new_request_id()
    request.state.request_id = request_id
    authenticator = cast(Authenticator, request.app.state.authenticator)
    credential = bearer_credential(request)
    cookie = session_value(request)
    if credential is None and cookie is None and authenticator.enabled:
        raise ConsoleDenied(Unauthenticated("log in with an API token to use the console"))
    try:
        if credential is not None:
            principal = authenticator.principal(credential)
        else:
            principal = authenticator.session(cookie)
    except Unauthenticated as exc:
        raise ConsoleDenied(exc) from None
    environment = request.query_params.get("env") or request.cookies.get(ENVIRONMENT_COOKIE) or None
    context = RequestContext(
        actor=principal.actor, environment=environment, request_id=request_id, roles=principal.roles
    )
    if authenticator.enabled:
        request.state.authenticated = context
    request.state.console_context = context
    return context


@dataclass(frozen=True)
class ConsoleAccess(Access):
    """``Access`` for console routes: the same roles and scopes, the caller from the console session."""

    def __call__(self, request: Request) -> None:  # type: ignore[override]  # a FastAPI dependency of its own: only the request, sync
        if not is_ready(request):
            raise ConsoleUnavailable()
        ctx = remembered_environment(console_context(request), request)
        request.state.console_context = ctx
        try:
            check(self.scope, self.needed(request.method), ctx, get_facades(request))
        except LsmError as exc:
            raise ConsoleDenied(exc) from None
        if getattr(request.state, "authenticated", None) is not None:
            # who may see details (``lsm.api.disclosure``) is decided on the environment the page
            # shows, by its id as roles are held: a console page names it only by the cookie
            found = get_facades(request).environments.identify(ctx.environment)
            request.state.authenticated = ctx.in_environment(found[0]) if found is not None else ctx


def remembered_environment(ctx: RequestContext, request: Request) -> RequestContext:
    """``ctx`` without the environment remembered by the switcher's cookie when that environment is
    gone or not the caller's: the console falls back to the default one instead of answering every
    page 404 (an environment named in the URL's ``env`` is still checked and refused as usual)."""
    if request.query_params.get("env") or ctx.environment is None:
        return ctx
    found = get_facades(request).environments.identify(ctx.environment)
    if found is None or not ctx.sees(*found):
        return ctx.in_environment(None)
    return ctx


def console_require(read: Role, *, write: Role | None = None, scope: Scope = Scope.ENVIRONMENT) -> Any:
    """The declaration of a console route's role (``lsm.api.access.require`` for the console)."""
    return Depends(ConsoleAccess(read, write, scope))


def context_of(request: Request) -> RequestContext:
    """The context ``ConsoleAccess`` resolved for this request."""
    return cast(RequestContext, request.state.console_context)


def may_act(request: Request) -> bool:
    """Whether the caller holds the operator role in the request's environment (action buttons)."""
    try:
        check(Scope.ENVIRONMENT, Role.OPERATOR, context_of(request), get_facades(request))
    except (Forbidden, LsmError):
        return False
    return True
