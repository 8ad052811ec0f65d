"""Helpers for model authors and for our own tests: a real engine, served, and clients on it.

Everything here builds the engine with ``lsm.runtime.wiring.build_api``, exactly as ``lsm
server`` does: a test written with these helpers exercises the same code as production, over
the same HTTP API. In-process calls go through the facades with a ``RequestContext``
(``engine.facades.inventory.get_instance(RequestContext.local(), "router", id)``).

Example (pytest)::

    from lsm.testing import engine_for, serve

    def test_order_a_router(tmp_path):
        engine = engine_for("examples/router_port", f"sqlite:///{tmp_path / 'lsm.db'}")
        try:
            with serve(engine) as client:
                router = client.create_instance("router", {"mgmt_ip": "10.0.0.1"})
                assert router["version"] == 1
        finally:
            engine.stop()

Why ``serve`` runs uvicorn on a real socket: ``httpx.ASGITransport`` is async-only, so the sync
``Client`` cannot use it; ``fastapi.testclient.TestClient``'s transport is private to Starlette
and runs the app through an anyio portal, which is no closer to production than a server.
uvicorn on ``127.0.0.1`` with a free port costs little, is the real server and also
lets the CLI (which takes a ``--url``) and subprocesses talk to the same engine. The async side
has no such problem: ``async_client`` talks to the app in-process over ``httpx.ASGITransport``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx

from lsm.api.server import BackgroundServer
from lsm.client import DEFAULT_RETRY, AsyncClient, Client, RetryPolicy
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api

#: what ``engine_for`` returns: the runtime of an API process (facades, app, compile processing)
Engine = ApiRuntime

__all__ = [
    "BackgroundServer",
    "Engine",
    "RequestContext",
    "async_client",
    "engine_for",
    "running_engine",
    "serve",
    "served_url",
]


def engine_for(
    model: str | Path | None,
    database_url: str,
    *,
    lifecycle_dirs: Sequence[str | Path] = (),
    embedded_worker: bool = True,
    embedded_agent: bool = False,
    state_dir: str | Path | None = None,
    **settings: Any,
) -> Engine:
    """A started engine on ``database_url`` whose default environment runs ``model``.

    ``settings`` are the default environment's settings (``partial_compiles=False`` ...);
    ``lifecycle_dirs`` adds lifecycle files to the bundled ones; ``embedded_worker=False`` leaves
    compile requests queued, for tests that must see instances stand still; ``embedded_agent``
    deploys the resources too (as ``lsm server`` does; the model's resource types need handlers),
    with handlers writing under ``state_dir``. No ``lsm.toml`` or
    ``LSM_*`` variable is read: a test must not depend on where it runs. The caller stops the
    engine (``running_engine`` does it for you).
    """
    config = ServerConfig(
        database_url=database_url,
        model=str(model) if model is not None else None,
        lifecycle_dirs=[str(d) for d in lifecycle_dirs],
        embedded_worker=embedded_worker,
        embedded_agent=embedded_agent,
        state_dir=str(state_dir) if state_dir is not None else None,
        settings=settings,
    )
    engine = build_api(config)
    engine.start()
    return engine


@contextmanager
def running_engine(model: str | Path | None, database_url: str, **options: Any) -> Iterator[Engine]:
    """``engine_for`` (same arguments) as a context manager that stops the engine at the end."""
    engine = engine_for(model, database_url, **options)
    try:
        yield engine
    finally:
        engine.stop()


@contextmanager
def served_url(engine: Engine) -> Iterator[str]:
    """Serve ``engine``'s API with uvicorn on 127.0.0.1 (a free port); yields the base URL."""
    with BackgroundServer(engine.app) as server:
        yield server.url


@contextmanager
def serve(
    engine: Engine,
    *,
    environment: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    token: str | None = None,
) -> Iterator[Client]:
    """Serve ``engine`` (see ``served_url``) and yield a sync ``Client`` on it (with ``token``
    when the engine has authentication on)."""
    with served_url(engine) as url, Client(url, environment, retry=retry, token=token) as client:
        yield client


@asynccontextmanager
async def async_client(
    engine: Engine,
    *,
    environment: str | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    token: str | None = None,
) -> AsyncIterator[AsyncClient]:
    """An ``AsyncClient`` talking to ``engine.app`` in-process (``httpx.ASGITransport``)."""
    transport = httpx.ASGITransport(app=engine.app)
    async with AsyncClient(
        "http://localhost", environment, transport=transport, retry=retry, token=token
    ) as client:
        yield client
