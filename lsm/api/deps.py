"""Dependencies shared by the routers: the engine and the environment of a request.

The environment is chosen by the ``X-LSM-Environment`` header (a name or an id); without it
the engine uses its default environment (``env=None``). Routes under
``/api/v1/environments/{env}`` name it in the path instead.
"""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Header, HTTPException, Request

from lsm.runtime.engine import Engine

ENVIRONMENT_HEADER = "X-LSM-Environment"


def get_engine(request: Request) -> Engine:
    """The engine that ``create_app`` put on the application, ready or not (``/health``)."""
    return cast(Engine, request.app.state.engine)


def ready_engine(engine: Annotated[Engine, Depends(get_engine)]) -> Engine:
    """The engine, or a 503 ``unavailable`` while it is not started (or stopping).

    A 503 is the one answer clients retry (``lsm.client.RetryPolicy``): a request that arrives
    before ``start()`` or after ``stop()`` is not refused for good, it is early or late.
    """
    if not engine.ready:
        raise HTTPException(503, "the engine is not ready yet")
    return engine


def get_environment(
    x_lsm_environment: Annotated[
        str | None,
        Header(
            alias=ENVIRONMENT_HEADER,
            description="Environment name or id; the default environment when absent.",
        ),
    ] = None,
) -> str | None:
    """The requested environment; an empty header counts as absent."""
    return x_lsm_environment or None


EngineDep = Annotated[Engine, Depends(ready_engine)]
EnvironmentDep = Annotated[str | None, Depends(get_environment)]
