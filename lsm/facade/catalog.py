"""The service catalog of an environment's model, and the lifecycles, as the API serves them."""

from __future__ import annotations

from typing import Any

from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.schemas.catalog import EntityOut, LifecycleOut
from lsm.store.instances import repository as repo


class CatalogFacade:
    """Entities (attributes, relations, identity, owner, lifecycle, instance summary) and lifecycles."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def list_entities(self, ctx: RequestContext, *, summary: bool = True) -> list[EntityOut]:
        env = self.core.environments.context(ctx.environment)
        here = ctx.in_environment(env.env_id)
        return [self.get_entity(here, name, summary=summary) for name in env.catalog.names()]

    def get_entity(self, ctx: RequestContext, entity: str, *, summary: bool = True) -> EntityOut:
        """One entity; ``summary=False`` leaves ``instance_summary`` empty (it counts the entity's
        instances: pages that do not show it skip a read that grows with the inventory)."""
        env = self.core.environments.context(ctx.environment)
        described = env.catalog.describe(entity)
        counts: dict[str, int] = {}
        if summary:
            with self.core.db.read() as session:
                counts = repo.count_by_state(session, env.env_id, entity)
        lifecycle = self.lifecycle(ctx, env.binding(entity).lifecycle)
        return EntityOut.model_validate({**described, "lifecycle": lifecycle, "instance_summary": counts})

    def entity_schema(self, ctx: RequestContext, entity: str) -> dict[str, Any]:
        return self.core.environments.context(ctx.environment).catalog.json_schema(entity)

    def lifecycle(self, ctx: RequestContext, name: str) -> LifecycleOut:
        return LifecycleOut.model_validate(self.core.lifecycles.get(name).model_dump(mode="json"))
