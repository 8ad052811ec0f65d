"""Which role a route needs, declared once per router (or per route), checked in one place.

Why declarative: no route checks roles by hand, and a new router gets its checks by one line::

    router = APIRouter(prefix="/api/v1/resources", dependencies=[require(Role.VIEWER, write=Role.OPERATOR)])

``create_app`` refuses a route that declares nothing (``public()`` for the few open ones), and
``tests/auth/test_roles.py`` runs every route against every kind of caller.

Scopes: ``ENVIRONMENT`` (the request's environment: the ``{env}`` path parameter, else
``X-LSM-Environment``, else the default one), ``GLOBAL`` (a role over every environment,
``*``), ``SOME`` (the role in at least one environment; the facade then shows only those).
An environment the caller holds no role in is answered 404 exactly like an unknown one (no
existence leak); a role too low is a 403 naming the role needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.routing import APIRoute, APIRouter

from lsm.api.deps import ContextDep, FacadesDep
from lsm.errors import Forbidden, UnknownEnvironment
from lsm.facade import Facades, RequestContext
from lsm.schemas.auth import Role

#: methods that change nothing: they need the ``read`` role of a declaration
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class Scope(StrEnum):
    ENVIRONMENT = "environment"
    GLOBAL = "global"
    SOME = "some"


@dataclass(frozen=True)
class Access:
    """A route's declared need: ``read`` for GET/HEAD, ``write`` (default ``read``) otherwise."""

    read: Role
    write: Role | None = None
    scope: Scope = Scope.ENVIRONMENT

    def needed(self, method: str) -> Role:
        return self.read if method.upper() in READ_METHODS or self.write is None else self.write

    async def __call__(self, request: Request, ctx: ContextDep, facades: FacadesDep) -> None:
        """On the event loop when a role over every environment answers (no lookup), else the
        check runs in the thread pool (it may read the environment); see ``lsm.api.deps``."""
        needed = self.needed(request.method)
        if allowed_everywhere(needed, ctx):
            return
        await run_in_threadpool(check, self.scope, needed, ctx, facades)


@dataclass(frozen=True)
class Public:
    """The declaration of an open route (``/health``): no credential needed."""

    async def __call__(self) -> None:
        return None


def require(read: Role, *, write: Role | None = None, scope: Scope = Scope.ENVIRONMENT) -> Any:
    """The dependency declaring a route's (or a router's) role; see the module docstring."""
    return Depends(Access(read, write, scope))


def public() -> Any:
    """The declaration of an open route."""
    return Depends(Public())


def allowed_everywhere(needed: Role, ctx: RequestContext) -> bool:
    """Whether ``ctx`` holds ``needed`` over every environment (then no scope can refuse it)."""
    everywhere = ctx.role_everywhere()
    return everywhere is not None and everywhere.allows(needed)


def check(scope: Scope, needed: Role, ctx: RequestContext, facades: Facades) -> None:
    """Refuse the request unless ``ctx`` holds ``needed`` in ``scope`` (404 / 403)."""
    if allowed_everywhere(needed, ctx):
        return
    everywhere = ctx.role_everywhere()
    if scope is Scope.GLOBAL:
        raise Forbidden(f"this needs the {needed.value} role over every environment", role=needed.value)
    if scope is Scope.SOME:
        if not any(role.allows(needed) for role in ctx.roles.values()):
            raise Forbidden(f"this needs the {needed.value} role in an environment", role=needed.value)
        return
    found = facades.environments.identify(ctx.environment)
    named = ctx.environment or facades.environments.default
    if found is None:
        if everywhere is not None:
            return  # the route answers its own 404
        raise UnknownEnvironment(f"unknown environment {named!r}", environment=named)
    env_id, name = found
    held = ctx.role_in(env_id, name)
    if held is None:
        raise UnknownEnvironment(f"unknown environment {named!r}", environment=named)
    if not held.allows(needed):
        raise Forbidden(
            f"this needs the {needed.value} role in environment {name!r}; the caller is {held.value}",
            role=needed.value,
            environment=name,
        )


def declared(route: APIRoute, router: APIRouter | None = None) -> list[Access | Public]:
    """The access declarations of a route: its router's (``router``) and its own."""
    found: list[Access | Public] = []
    for dep in [*(router.dependencies if router is not None else []), *route.dependencies]:
        call = dep.dependency
        if isinstance(call, Access | Public):
            found.append(call)
    return found


def route_table(routers: Iterable[APIRouter]) -> list[tuple[str, str, list[Access | Public]]]:
    """``(method, path, declarations)`` of every route of ``routers`` (what the role test walks)."""
    return [
        (method, route.path, declared(route, router))
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in sorted(route.methods or ())
    ]


def check_declared(routers: Iterable[APIRouter]) -> None:
    """Every API route declares its access: a route that forgot is refused at start."""
    missing = [f"{method} {path}" for method, path, found in route_table(routers) if not found]
    if missing:
        raise RuntimeError(f"routes without an access declaration (require(...) or public()): {missing}")
