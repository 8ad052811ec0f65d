"""``create_app(engine)``: the FastAPI application over one running ``Engine``.

The app does not start or stop the engine: whoever built the engine owns it (``lsm server``,
``lsm quickstart``, ``lsm.testing``), so that one engine can be served over a real socket and
in-process at the same time, and tests control its lifetime.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import FastAPI

from lsm.api import catalog, compiles, desired_state, environments, health, inventory
from lsm.api.errors import install_error_handlers
from lsm.runtime.engine import Engine

ROUTERS = (
    health.router,
    catalog.router,
    inventory.router,
    compiles.router,
    desired_state.router,
    environments.router,
)


def create_app(engine: Engine) -> FastAPI:
    """The HTTP API of docs/api.md over ``engine``; OpenAPI at ``/docs`` and ``/openapi.json``."""
    app = FastAPI(
        title="lsm-engine",
        version=_version(),
        description="Service lifecycle engine: catalog, inventory, compiles, desired state.",
    )
    app.state.engine = engine
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    return app


def _version() -> str:
    try:
        return version("lsm-engine")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"
