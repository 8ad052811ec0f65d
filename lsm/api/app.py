"""``create_app(facades, is_ready=...)``: the FastAPI application over the engine's facades.

The app does not start or stop anything: whoever built the facades owns the runtime
(``lsm.runtime.wiring``), so that one runtime can be served over a real socket and in-process
at the same time, and tests control its lifetime. ``is_ready`` answers ``/health`` (and the 503
of every route while the runtime is not started).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from fastapi import FastAPI

from lsm.api import (
    catalog,
    compiles,
    deploy,
    desired_state,
    discovery,
    environments,
    events,
    health,
    inventory,
)
from lsm.api.deps import RequestIdMiddleware
from lsm.api.errors import install_error_handlers
from lsm.facade import Facades

ROUTERS = (
    health.router,
    catalog.router,
    discovery.adopt_router,  # before inventory: POST /{entity}/adopt
    inventory.router,
    compiles.router,
    desired_state.router,
    environments.router,
    events.router,
    deploy.router,
    discovery.router,
)


def create_app(facades: Facades, *, is_ready: Callable[[], bool] = lambda: True) -> FastAPI:
    """The HTTP API of docs/api.md over ``facades``; OpenAPI at ``/docs`` and ``/openapi.json``."""
    app = FastAPI(
        title="lsm-engine",
        version=_version(),
        description="Service lifecycle engine: catalog, inventory, compiles, desired state.",
    )
    app.state.facades = facades
    app.state.is_ready = is_ready
    install_error_handlers(app)
    app.add_middleware(RequestIdMiddleware)  # outermost: error answers carry the request id too
    for router in ROUTERS:
        app.include_router(router)
    return app


def _version() -> str:
    try:
        return version("lsm-engine")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"
