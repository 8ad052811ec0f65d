"""``/api/v1/desired_state``: the desired-state versions and their resource sets."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from lsm.api.deps import EngineDep, EnvironmentDep

router = APIRouter(prefix="/api/v1/desired_state", tags=["desired state"])


@router.get("")
def list_desired_states(
    engine: EngineDep,
    env: EnvironmentDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> list[dict[str, Any]]:
    """Versions, newest first."""
    return engine.list_desired_states(env, limit=limit, offset=offset)


@router.get("/{version}")
def get_desired_state(version: int, engine: EngineDep, env: EnvironmentDep) -> dict[str, Any]:
    """One version: its resource sets (name -> resource ids) and the shared ids."""
    return engine.desired_state(env, version)


@router.get("/{version}/resources")
def get_desired_state_resources(version: int, engine: EngineDep, env: EnvironmentDep) -> list[dict[str, Any]]:
    """The version's resources: id, set, attributes, requires."""
    return engine.desired_state_resources(env, version)
