"""``create_app(facades, is_ready=...)``: the FastAPI application over the engine's facades.

The app does not start or stop anything: whoever built the facades owns the runtime
(``lsm.runtime.wiring``), so that one runtime can be served over a real socket and in-process
at the same time, and tests control its lifetime. ``is_ready`` answers ``/health`` (and the 503
of every route while the runtime is not started).

Input rules that hold for every route are installed here, once: the body size limit
(``lsm.api.limits``), strings no store can hold (``lsm.api.screening``, an app-wide
dependency) and the offline ``/docs`` (``lsm.api.docs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version

from fastapi import Depends, FastAPI

from lsm.api import (
    audit,
    catalog,
    compiles,
    compliance,
    deploy,
    desired_state,
    discovery,
    environments,
    events,
    expert,
    graphs,
    health,
    inventory,
    metrics,
    orders,
    tokens,
    webhooks,
)
from lsm.api.access import check_declared
from lsm.api.auth import Authenticator
from lsm.api.console import install_console
from lsm.api.deps import RequestIdMiddleware
from lsm.api.docs import install_docs
from lsm.api.errors import install_error_handlers
from lsm.api.hosts import HostCheckMiddleware, allowed_names
from lsm.api.limits import BodyLimitMiddleware
from lsm.api.refs import KeepEncodedSlashes
from lsm.api.screening import screen_request
from lsm.api.streams import StreamLimits
from lsm.api.write_lane import ChangeAdmission
from lsm.facade import Facades
from lsm.schemas.auth import AuthConfig
from lsm.schemas.limits import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_STREAMS, DEFAULT_MAX_STREAMS_PER_CALLER

ROUTERS = (
    health.router,
    catalog.router,
    discovery.adopt_router,  # before inventory: POST /{entity}/adopt
    expert.router,
    inventory.router,
    orders.router,
    compiles.router,
    desired_state.router,
    environments.router,
    events.router,
    deploy.router,
    compliance.router,
    discovery.router,
    tokens.router,
    audit.router,
    metrics.router,
    graphs.router,
    webhooks.router,
)


def create_app(
    facades: Facades,
    *,
    is_ready: Callable[[], bool] = lambda: True,
    auth: AuthConfig | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    allowed_hosts: Sequence[str] = (),
    listen_host: str | None = None,
    max_streams: int = DEFAULT_MAX_STREAMS,
    max_streams_per_caller: int = DEFAULT_MAX_STREAMS_PER_CALLER,
) -> FastAPI:
    """The HTTP API of docs/api.md over ``facades``; OpenAPI at ``/docs`` and ``/openapi.json``.

    ``auth``: off when not given (every caller ``local``, the embedded default). Every route
    must declare its access (``lsm.api.access``): one that does not is refused here.
    ``max_body_bytes``: the largest request body accepted (413 above it).
    ``allowed_hosts``, ``listen_host``: the ``Host`` names answered besides the loopback ones
    (``lsm.api.hosts``: with authentication off, only those).
    ``max_streams``, ``max_streams_per_caller``: event streams open at once (``lsm.api.streams``).
    """
    auth = auth or AuthConfig()
    app = FastAPI(
        title="lsm-engine",
        version=_version(),
        description="Service lifecycle engine: catalog, inventory, compiles, desired state.",
        openapi_url=None,  # served by lsm.api.docs, behind the authentication setting
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(screen_request)],
    )
    app.state.facades = facades
    app.state.is_ready = is_ready
    app.state.authenticator = Authenticator(auth, facades.tokens)
    app.state.stream_limits = StreamLimits(max_streams, max_streams_per_caller)
    install_docs(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    install_error_handlers(app)
    app.add_middleware(RequestIdMiddleware)  # error answers carry the request id too
    app.add_middleware(KeepEncodedSlashes, prefix=inventory.router.prefix)  # lsm.api.refs
    # outermost: a change waiting for its turn costs nothing yet (lsm.api.write_lane)
    app.add_middleware(ChangeAdmission, prefix=inventory.router.prefix, max_body_bytes=max_body_bytes)
    # outermost of all: a request to a name this server is not known by reaches nothing
    hosts = allowed_names(allowed_hosts, auth_enabled=auth.enabled, listen=listen_host)
    app.add_middleware(HostCheckMiddleware, allowed=hosts)
    check_declared(ROUTERS)
    for router in ROUTERS:
        app.include_router(router)
    install_console(app)  # the web console at / (lsm.api.console, docs/console.md)
    return app


def _version() -> str:
    try:
        return version("lsm-engine")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0.0.0"
