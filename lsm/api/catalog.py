"""``/lsm/v1/service_catalog``: the service entities of an environment's model, and lifecycles."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import EntityName, Name
from lsm.api.responses import READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.catalog import EntityOut, LifecycleOut

router = APIRouter(tags=["service catalog"], dependencies=[require(Role.VIEWER)], responses=errors(*READ))


@router.get("/lsm/v1/service_catalog")
def list_catalog(facades: FacadesDep, ctx: ContextDep) -> list[EntityOut]:
    """Every entity: attributes, relations, identity, owner, lifecycle and an instance summary."""
    return facades.catalog.list_entities(ctx)


@router.get("/lsm/v1/service_catalog/{entity}")
def get_entity(entity: EntityName, facades: FacadesDep, ctx: ContextDep) -> EntityOut:
    """One entity of the catalog."""
    return facades.catalog.get_entity(ctx, entity)


@router.get("/lsm/v1/service_catalog/{entity}/schema")
def get_entity_schema(entity: EntityName, facades: FacadesDep, ctx: ContextDep) -> dict[str, Any]:
    """The JSON schema of the entity's attributes."""
    return facades.catalog.entity_schema(ctx, entity)


@router.get("/lsm/v1/lifecycles/{name}")
def get_lifecycle(name: Name, facades: FacadesDep, ctx: ContextDep) -> LifecycleOut:
    """A lifecycle by name: its states and transfers (docs/semantics.md §1)."""
    return facades.catalog.lifecycle(ctx, name)
