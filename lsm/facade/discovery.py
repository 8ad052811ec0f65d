"""Discovered resources, and adopting them into the service inventory.

Why here: listing is a read of ``lsm.store.discovery.statements``; adoption joins three things
that live apart (the discovered values, the model's adopter for that type and entity, the
lifecycle's adoption state) and then hands ordinary ``Create`` commands, marked ``adopts``, to
``Orchestrator.execute_many``: all or nothing, each instance's event log opening with an
``adopt`` line, and the adoption recorded in the same transaction.

**Adoption state.** An adopted resource already exists on its target, so the instance does
not start in the lifecycle's initial state: it starts in one of the lifecycle's
``alternative_initial_states`` (the request may name one; the first by default). A lifecycle
that lists none can not adopt (422 naming the entity and lifecycle). The bundled lifecycles
list none on purpose (docs/semantics.md §1); a model that adopts brings its own lifecycle, e.g.
``examples/discovery/adoptable.yaml``, whose ``adopted`` state promotes and goes on to
``creating``: the first deploy then finds the target as desired and changes nothing.
"""

from __future__ import annotations

from lsm.errors import Conflict, InvalidInput, ModelError, NotFound
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.views import instance_out
from lsm.model.resource_id import parse_resource_id
from lsm.orchestration import Command, Create, EnvironmentContext
from lsm.schemas.discovery import DiscoveredResourceOut
from lsm.schemas.inventory import InstanceOut
from lsm.store.discovery import statements as store


def discovered_out(row: store.DiscoveredRow) -> DiscoveredResourceOut:
    return DiscoveredResourceOut(
        id=row.resource_id,
        type=row.resource_type,
        agent=row.agent,
        attributes=row.attributes,
        discovered_by=row.discovered_by,
        discovery_agent=row.discovery_agent,
        first_seen=row.first_seen,
        last_seen=row.last_seen,
        managed=row.managed,
        adopted_by=row.adopted_by,
        adopted_entity=row.adopted_entity,
        adopted_at=row.adopted_at,
    )


class DiscoveryFacade:
    """List and read discovered resources; adopt them as instances."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def _env(self, ctx: RequestContext) -> EnvironmentContext:
        return self.core.environments.context(ctx.environment)

    def list_discovered(
        self,
        ctx: RequestContext,
        *,
        resource_type: str | None = None,
        agent: str | None = None,
        managed: bool | None = None,
        discovered_by: str | None = None,
        adopted: bool | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[DiscoveredResourceOut]:
        if limit < 1 or limit > 10_000 or offset < 0:
            raise InvalidInput("limit must be 1..10000 and offset >= 0", limit=limit, offset=offset)
        env = self._env(ctx)
        with self.core.db.read() as session:
            rows = store.list_discovered(
                session,
                env.env_id,
                resource_type=resource_type,
                agent=agent,
                managed=managed,
                discovered_by=discovered_by,
                adopted=adopted,
                limit=limit,
                offset=offset,
            )
        return [discovered_out(row) for row in rows]

    def get_discovered(self, ctx: RequestContext, resource_id: str) -> DiscoveredResourceOut:
        env = self._env(ctx)
        with self.core.db.read() as session:
            row = store.get_discovered(session, env.env_id, resource_id)
        if row is None:
            raise NotFound(f"no discovered resource {resource_id}", resource_id=resource_id)
        return discovered_out(row)

    def adoption_targets(self, ctx: RequestContext) -> dict[str, list[str]]:
        """Resource type -> the entities the model may adopt it into (``@lsm.adopt`` declarations)."""
        found: dict[str, list[str]] = {}
        for resource_type, entity in sorted(self._env(ctx).model.adopters):
            found.setdefault(resource_type, []).append(entity)
        return found

    def adopt(
        self,
        ctx: RequestContext,
        entity: str,
        discovered_ids: list[str],
        *,
        initial_state: str | None = None,
    ) -> list[InstanceOut]:
        """Create one ``entity`` instance per discovered id, all or none (see the module docstring)."""
        env = self._env(ctx)
        binding = env.binding(entity)
        lifecycle = env.lifecycle(binding)
        state = self._adoption_state(
            binding.name, lifecycle.name, lifecycle.alternative_initial_states, initial_state
        )
        for index, rid in enumerate(discovered_ids):
            parse_resource_id(rid, field=f"discovered_ids[{index}]")
        duplicates = sorted({rid for rid in discovered_ids if discovered_ids.count(rid) > 1})
        if duplicates:
            raise InvalidInput(
                f"discovered_ids names {duplicates[0]} more than once",
                field="discovered_ids",
                resource_id=duplicates[0],
            )
        with self.core.db.read() as session:
            rows = store.find_discovered(session, env.env_id, discovered_ids)
        missing = [rid for rid in discovered_ids if rid not in rows]
        if missing:
            raise NotFound(
                f"no discovered resource {missing[0]}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                resource_id=missing[0],
                resource_ids=missing,
            )
        refused = {rid: why for rid in discovered_ids if (why := _refusal(rows[rid])) is not None}
        if refused:
            first = next(iter(refused))
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise Conflict(
                f"discovered resource {first} {refused[first]}{more}; nothing was adopted",
                resource_id=first,
                refused=refused,
            )
        commands: list[Command] = [
            Create(
                binding.name, self._attributes(env, binding.name, rows[rid]), initial_state=state, adopts=rid
            )
            for rid in discovered_ids
        ]
        created = self.core.orchestrator.execute_many(env, commands, origin=ctx.origin)
        return [instance_out(row) for row in created]

    @staticmethod
    def _adoption_state(entity: str, lifecycle: str, allowed: list[str], requested: str | None) -> str:
        if not allowed:
            raise InvalidInput(
                f"{entity} can not adopt: its lifecycle {lifecycle!r} lists no alternative_initial_states",
                entity=entity,
                lifecycle=lifecycle,
            )
        if requested is None:
            return allowed[0]
        if requested not in allowed:
            raise InvalidInput(
                f"initial_state {requested!r} is not an adoption state of lifecycle {lifecycle!r}; "
                f"allowed: {', '.join(allowed)}",
                field="initial_state",
                allowed=allowed,
            )
        return requested

    @staticmethod
    def _attributes(env: EnvironmentContext, entity: str, row: store.DiscoveredRow) -> dict[str, object]:
        adopter = env.model.adopters.get((row.resource_type, entity))
        if adopter is None:
            known = sorted(f"{t} -> {e}" for t, e in env.model.adopters)
            raise InvalidInput(
                f"the model declares no adoption of {row.resource_type} into {entity} "
                f"(for {row.resource_id}); declared: {', '.join(known) or 'none'}",
                resource_id=row.resource_id,
                entity=entity,
            )
        try:
            return adopter.attributes(row.attributes, parse_resource_id(row.resource_id))
        except Exception as exc:
            raise ModelError(
                f"adopter of {row.resource_type} into {entity} failed for {row.resource_id}: "
                f"{type(exc).__name__}: {exc}",
                resource_id=row.resource_id,
            ) from None


def _refusal(row: store.DiscoveredRow) -> str | None:
    """Why ``row`` can not be adopted, or ``None`` when it can."""
    if row.adopted_by is not None:
        return f"is already adopted by {row.adopted_entity} {row.adopted_by}"
    if row.managed:
        return "is already managed (it is in the newest desired state)"
    return None
