"""The service catalog of an environment's model, and the lifecycles, as the API serves them."""

from __future__ import annotations

from typing import Any

from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.inventory import repository as repo


class CatalogFacade:
    """Entities (attributes, relations, identity, owner, lifecycle, instance summary) and lifecycles."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def list_entities(self, ctx: RequestContext) -> list[dict[str, Any]]:
        env = self.core.environments.context(ctx.environment)
        return [self.get_entity(ctx.in_environment(env.env_id), name) for name in env.catalog.names()]

    def get_entity(self, ctx: RequestContext, entity: str) -> dict[str, Any]:
        env = self.core.environments.context(ctx.environment)
        out = env.catalog.describe(entity)
        out["lifecycle"] = self.lifecycle(ctx, env.binding(entity).lifecycle)
        with self.core.db.read() as session:
            out["instance_summary"] = repo.count_by_state(session, env.env_id, entity)
        return out

    def entity_schema(self, ctx: RequestContext, entity: str) -> dict[str, Any]:
        return self.core.environments.context(ctx.environment).catalog.json_schema(entity)

    def lifecycle(self, ctx: RequestContext, name: str) -> dict[str, Any]:
        return self.core.lifecycles.get(name).model_dump(mode="json")
