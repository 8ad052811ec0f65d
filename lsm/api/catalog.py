"""``/lsm/v1/service_catalog``: the service entities of an environment's model, and lifecycles."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from lsm.api.deps import EngineDep, EnvironmentDep

router = APIRouter(tags=["service catalog"])


@router.get("/lsm/v1/service_catalog")
def list_catalog(engine: EngineDep, env: EnvironmentDep) -> list[dict[str, Any]]:
    """Every entity: attributes, relations, identity, owner, lifecycle and an instance summary."""
    return engine.catalog(env)


@router.get("/lsm/v1/service_catalog/{entity}")
def get_entity(entity: str, engine: EngineDep, env: EnvironmentDep) -> dict[str, Any]:
    """One entity of the catalog."""
    return engine.catalog_entity(env, entity)


@router.get("/lsm/v1/service_catalog/{entity}/schema")
def get_entity_schema(entity: str, engine: EngineDep, env: EnvironmentDep) -> dict[str, Any]:
    """The JSON schema of the entity's attributes."""
    return engine.entity_schema(env, entity)


@router.get("/lsm/v1/lifecycles/{name}")
def get_lifecycle(name: str, engine: EngineDep) -> dict[str, Any]:
    """A lifecycle by name: its states and transfers (docs/semantics.md §1)."""
    return engine.lifecycle(name)
