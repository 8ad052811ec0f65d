"""Service instances: order, change and inspect them, as the API serves them.

The reads (lists, searches, one instance, its log, resources and diagnosis) are in
``lsm.facade.inventory_reads``; ``InventoryFacade`` inherits them. Every change is a command
handed to ``Orchestrator.execute`` with the caller's ``Origin``; nothing here writes an instance.
``ref`` is an instance id or ``<identity_attr>=<value>``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from lsm.errors import Conflict, IdempotencyKeyReused, InvalidInput
from lsm.facade.context import RequestContext
from lsm.facade.inventory_reads import InventoryReads
from lsm.facade.views import instance_out
from lsm.orchestration import (
    Command,
    Create,
    Delete,
    ForceAttributes,
    ForceDestroy,
    ForceState,
    SetState,
    Update,
)
from lsm.orchestration.imports import import_instances
from lsm.schemas.bulk import BulkCreate, BulkResult, BulkUpdate
from lsm.schemas.inventory import InstanceOut
from lsm.schemas.limits import MAX_IDEMPOTENCY_KEY_LENGTH
from lsm.store.idempotency import IdempotencyKeyRow, claim_key, find_key, record_answer
from lsm.store.tables import InstanceRow

#: runs a facade call in a thread and awaits it (the API's write lane, ``lsm.api.write_lane``)
InThread = Callable[..., Awaitable[InstanceOut]]


class InventoryFacade(InventoryReads):
    """Create, list, read, update, move and delete instances; their log, resources and diagnosis."""

    def _execute(self, ctx: RequestContext, command: Command) -> InstanceOut:
        row = self.core.orchestrator.execute(self._env(ctx), command, origin=ctx.origin, grouped=True)
        return instance_out(row)

    # -- changes ---------------------------------------------------------------------------------
    def create_instance(
        self,
        ctx: RequestContext,
        entity: str,
        attributes: dict[str, Any],
        *,
        instance_id: str | None = None,
        initial_state: str | None = None,
        idempotency_key: str | None = None,
    ) -> InstanceOut:
        """Order an instance. Retried with the same ``idempotency_key`` (or the same chosen
        ``instance_id``) and the same request, the answer is the first answer, not a second
        instance; the same key with another request is ``IdempotencyKeyReused`` (422)."""
        request = {
            "entity": entity,
            "attributes": attributes,
            "instance_id": instance_id,
            "initial_state": initial_state,
        }
        fingerprint = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()
        if idempotency_key is not None and not 0 < len(idempotency_key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
            raise InvalidInput(
                f"an Idempotency-Key has 1..{MAX_IDEMPOTENCY_KEY_LENGTH} characters", field="Idempotency-Key"
            )
        key = idempotency_key or (f"instance:{instance_id}" if instance_id else None)
        if key is None:
            return self._execute(
                ctx, Create(entity, attributes, instance_id=None, initial_state=initial_state)
            )
        env = self._env(ctx)
        first = self._first_answer(env.env_id, key, fingerprint, keyed=idempotency_key is not None)
        if first is not None:
            return first

        stored: list[IdempotencyKeyRow] = []

        def claim(session: Session, row: InstanceRow) -> None:  # in the create's transaction
            body = instance_out(row).model_dump(mode="json")
            stored[:] = [
                IdempotencyKeyRow(
                    env_id=env.env_id, key=key, fingerprint=fingerprint, instance_id=row.id, body=body
                )
            ]
            claim_key(session, stored[0])

        command = Create(entity, attributes, instance_id=instance_id, initial_state=initial_state)
        try:
            row = self.core.orchestrator.execute(env, command, origin=ctx.origin, grouped=True, then=claim)
        except (Conflict, IntegrityError) as exc:
            # a concurrent first use of the key committed first (its key row, or the chosen id
            # or identity value of the same request): its answer is this request's answer
            first = self._first_answer(env.env_id, key, fingerprint, keyed=idempotency_key is not None)
            if first is not None:
                return first
            if isinstance(exc, Conflict):
                raise
            raise Conflict("a concurrent create took this request's instance id") from None
        out = instance_out(row)
        body = out.model_dump(mode="json")
        if body != stored[0].body:  # auto transfers after the create's transaction moved it on
            record_answer(self.core.db, env.env_id, key, out.id, body)
        return out

    def _first_answer(self, env_id: str, key: str, fingerprint: str, *, keyed: bool) -> InstanceOut | None:
        """The stored answer of ``key`` when this request (``fingerprint``) made it; None when the
        key is unused. The key used by another request is a 422 naming it (an
        ``Idempotency-Key``), or a 409 (a chosen instance id taken by another create)."""
        with self.core.db.read() as session:
            first = find_key(session, env_id, key)
        if first is None:
            return None
        if first.fingerprint == fingerprint:
            return InstanceOut.model_validate(first.body)
        if keyed:
            raise IdempotencyKeyReused(
                f"the Idempotency-Key {key!r} was used for another request; use a new key for a new create",
                field="Idempotency-Key",
                key=key,
                instance=first.instance_id,
            )
        raise Conflict(f"instance id {first.instance_id} is already used", instance=first.instance_id)

    def import_instances(
        self, ctx: RequestContext, entity: str, state: str, attribute_sets: list[dict[str, Any]]
    ) -> list[str]:
        """Bulk-import instances straight into ``state`` (see ``lsm.orchestration.imports``)."""
        return import_instances(self.core.db, self._env(ctx), entity, state, attribute_sets)

    def bulk(
        self, ctx: RequestContext, entity: str, *, create: list[BulkCreate], update: list[BulkUpdate]
    ) -> BulkResult:
        """Create and update many instances in one transaction (``Orchestrator.execute_many``)."""
        commands: list[Command] = [
            Create(entity, item.attributes, instance_id=item.service_instance_id) for item in create
        ]
        commands += [Update(entity, item.id, item.current_version, item.attributes) for item in update]
        rows = self.core.orchestrator.execute_many(self._env(ctx), commands, origin=ctx.origin)
        out = [instance_out(row) for row in rows]
        return BulkResult(created=out[: len(create)], updated=out[len(create) :])

    def update_instance(
        self, ctx: RequestContext, entity: str, ref: str, *, current_version: int, attributes: dict[str, Any]
    ) -> InstanceOut:
        return self._execute(ctx, Update(entity, ref, current_version, attributes))

    # -- changes awaited on an event loop ----------------------------------------------------
    async def _execute_async(self, ctx: RequestContext, command: Command, thread: InThread) -> InstanceOut:
        """``_execute`` for a caller on an event loop (an API route).

        With group commit on and the environment's context fresh in the cache, the command
        joins the next shared transaction and its commit is awaited on the loop, no thread
        held (``Orchestrator.execute_async``); otherwise (a context to check against the
        database, group commit off as on PostgreSQL) ``thread`` runs ``_execute`` in a thread
        of the caller's choice (the API's write lane). Same transaction, same answer.
        """
        env = self.core.environments.fresh_context(ctx.environment)
        if env is None or self.core.orchestrator.group is None:
            return await thread(self._execute, ctx, command)
        row = await self.core.orchestrator.execute_async(env, command, origin=ctx.origin)
        return instance_out(row)

    async def update_instance_async(
        self,
        ctx: RequestContext,
        entity: str,
        ref: str,
        *,
        current_version: int,
        attributes: dict[str, Any],
        thread: InThread,
    ) -> InstanceOut:
        return await self._execute_async(ctx, Update(entity, ref, current_version, attributes), thread)

    async def set_state_async(
        self,
        ctx: RequestContext,
        entity: str,
        ref: str,
        *,
        current_version: int,
        target_state: str,
        message: str = "",
        thread: InThread,
    ) -> InstanceOut:
        command = SetState(entity, ref, current_version, target_state, message)
        return await self._execute_async(ctx, command, thread)

    async def delete_instance_async(
        self, ctx: RequestContext, entity: str, ref: str, *, current_version: int, thread: InThread
    ) -> InstanceOut:
        return await self._execute_async(ctx, Delete(entity, ref, current_version), thread)

    def set_state(
        self,
        ctx: RequestContext,
        entity: str,
        ref: str,
        *,
        current_version: int,
        target_state: str,
        message: str = "",
    ) -> InstanceOut:
        return self._execute(ctx, SetState(entity, ref, current_version, target_state, message))

    def delete_instance(
        self, ctx: RequestContext, entity: str, ref: str, *, current_version: int
    ) -> InstanceOut:
        return self._execute(ctx, Delete(entity, ref, current_version))

    # -- expert mode (``lsm.orchestration.expert``: the gate, the reason and the audit) ------------
    def expert_mode(self, ctx: RequestContext) -> bool:
        """Whether the environment's ``expert_mode`` setting is on (as its context last saw it)."""
        return self._env(ctx).settings.expert_mode

    def _expert(self, ctx: RequestContext, command: Command) -> InstanceOut:
        # never grouped: the audit record is written through the session, not as batched values
        return instance_out(self.core.orchestrator.execute(self._env(ctx), command, origin=ctx.origin))

    def expert_state(
        self, ctx: RequestContext, entity: str, ref: str, *, current_version: int, state: str, reason: str
    ) -> InstanceOut:
        """Force the instance into ``state`` of its lifecycle (no transfer needed)."""
        return self._expert(ctx, ForceState(entity, ref, current_version, state, reason=reason))

    def expert_attributes(
        self,
        ctx: RequestContext,
        entity: str,
        ref: str,
        *,
        current_version: int,
        sets: dict[str, dict[str, Any] | None],
        reason: str,
    ) -> InstanceOut:
        """Replace the given attribute sets (``candidate``, ``active``, ``rollback``)."""
        return self._expert(ctx, ForceAttributes(entity, ref, current_version, sets, reason))

    def expert_destroy(
        self,
        ctx: RequestContext,
        entity: str,
        ref: str,
        *,
        current_version: int,
        reason: str,
        purge_resources: bool,
    ) -> InstanceOut:
        """Terminate the instance without its lifecycle; its resources left or purged."""
        return self._expert(ctx, ForceDestroy(entity, ref, current_version, reason, purge_resources))
