"""``/lsm/v1/service_inventory``: ordering, changing and inspecting service instances.

Thin by design: parse, call the facade, return its view. The change routes are ``async def``.
Update, set state and delete await their commit on the event loop when group commit is on
(``InventoryFacade.*_async``: the command joins the next shared transaction, no thread held);
otherwise, and for create and bulk, they call their facade in a thread themselves: a sync route
takes a second hop through the pool to validate its answer, and under a burst that hop waits
behind every request queued meanwhile, so every answer of the burst came at its end (see
``lsm.api.deps``). Those threads come from the write lane (``lsm.api.write_lane``), not the
default pool, so that a burst of changes waiting for their commit does not hold up the reads.

Every rule (versions, transfers, attribute modifiers, identity) lives behind the facades
(``lsm.facade``); its errors become responses in ``lsm.api.errors``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import StringConstraints

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.disclosure import shown_diagnosis, shown_event
from lsm.api.params import CurrentVersion, EntityName, IdempotencyKey, InstanceRef, Offset
from lsm.api.responses import CHANGE, READ, errors, model_json
from lsm.api.write_lane import run_change
from lsm.facade.inventory_search import MAX_ATTRIBUTE_MATCHES, MAX_MATCH_VALUE_LENGTH
from lsm.schemas.auth import Role
from lsm.schemas.bulk import BulkRequest, BulkResult
from lsm.schemas.inventory import (
    CreateInstance,
    DiagnosisOut,
    EventOut,
    InstanceOut,
    InstanceResourceOut,
    SetStateRequest,
    UpdateInstance,
)
from lsm.schemas.limits import MAX_IDENTITY_LENGTH, MAX_NAME_LENGTH

router = APIRouter(
    prefix="/lsm/v1/service_inventory",
    tags=["service inventory"],
    dependencies=[require(Role.VIEWER, write=Role.OPERATOR)],
    responses=errors(*READ),
)

#: the longest ``attribute`` parameter: a name, ``=`` and a value
MAX_MATCH_LENGTH = MAX_NAME_LENGTH + 1 + MAX_MATCH_VALUE_LENGTH

_REF = "an instance id, or <identity_attr>=<value>"


@router.post("/{entity}", responses=errors(*CHANGE))
async def create_instance(
    entity: EntityName,
    body: CreateInstance,
    facades: FacadesDep,
    ctx: ContextDep,
    idempotency_key: IdempotencyKey = None,
) -> InstanceOut:
    """Order a new instance; it starts at version 1 in the lifecycle's initial state.

    Idempotent with an ``Idempotency-Key`` (or a chosen ``service_instance_id``): a retry answers
    the first answer."""
    return await run_change(
        facades.inventory.create_instance,
        ctx,
        entity,
        body.attributes,
        instance_id=body.service_instance_id,
        initial_state=body.initial_state,
        idempotency_key=idempotency_key,
    )


@router.post("/{entity}/bulk", responses=errors(*CHANGE))
async def bulk(entity: EntityName, body: BulkRequest, facades: FacadesDep, ctx: ContextDep) -> BulkResult:
    """Create and update many instances at once: all of them, or none and every refused item listed."""
    return await run_change(facades.inventory.bulk, ctx, entity, create=body.create, update=body.update)


@router.get("/{entity}")
def list_instances(
    entity: EntityName,
    facades: FacadesDep,
    ctx: ContextDep,
    state: Annotated[
        list[Annotated[str, StringConstraints(max_length=MAX_NAME_LENGTH)]] | None,
        Query(description="Only these states (repeatable).", max_length=100),
    ] = None,
    include_deleted: bool = False,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Offset = 0,
    sort: Annotated[
        str,
        Query(
            max_length=MAX_NAME_LENGTH,
            description="created_at, last_updated, state, version, id or identity; "
            "-key or key.desc: descending.",
        ),
    ] = "created_at",
    identity: Annotated[
        str | None,
        Query(
            max_length=MAX_IDENTITY_LENGTH,
            description="Only instances whose identity contains this (any case).",
        ),
    ] = None,
    attribute: Annotated[
        list[Annotated[str, StringConstraints(max_length=MAX_MATCH_LENGTH)]] | None,
        Query(
            description="Only instances whose attribute equals the value, as name=value, in the candidate "
            f"or the active set (repeatable, at most {MAX_ATTRIBUTE_MATCHES}; all must match).",
            max_length=MAX_ATTRIBUTE_MATCHES,
        ),
    ] = None,
) -> list[InstanceOut]:
    """The entity's instances; deleted ones only with ``include_deleted``; searched by ``identity``
    and ``attribute``."""
    return facades.inventory.list_instances(
        ctx,
        entity,
        states=state or None,
        include_deleted=include_deleted,
        limit=limit,
        offset=offset,
        sort=sort,
        identity=identity,
        attributes=attribute or None,
    )


@router.get("/{entity}/{ref}")
def get_instance(entity: EntityName, ref: InstanceRef, facades: FacadesDep, ctx: ContextDep) -> InstanceOut:
    """One instance, by id or by ``<identity_attr>=<value>``."""
    return facades.inventory.get_instance(ctx, entity, ref)


@router.patch("/{entity}/{ref}", responses=errors(*CHANGE), response_model=InstanceOut)
async def update_instance(
    entity: EntityName, ref: InstanceRef, body: UpdateInstance, facades: FacadesDep, ctx: ContextDep
) -> Response:
    """Update the candidate attributes; fires the state's ``on_update`` transfer."""
    updated = await facades.inventory.update_instance_async(
        ctx,
        entity,
        ref,
        current_version=body.current_version,
        attributes=body.attributes,
        thread=run_change,
    )
    return model_json(updated)


@router.post("/{entity}/{ref}/state", responses=errors(*CHANGE))
async def set_state(
    entity: EntityName, ref: InstanceRef, body: SetStateRequest, facades: FacadesDep, ctx: ContextDep
) -> InstanceOut:
    """Fire the ``api_set_state`` transfer to ``target_state``."""
    return await facades.inventory.set_state_async(
        ctx,
        entity,
        ref,
        current_version=body.current_version,
        target_state=body.target_state,
        message=body.message or "",
        thread=run_change,
    )


@router.delete("/{entity}/{ref}", responses=errors(*READ, 400, 409))
async def delete_instance(
    entity: EntityName,
    ref: InstanceRef,
    current_version: CurrentVersion,
    facades: FacadesDep,
    ctx: ContextDep,
) -> InstanceOut:
    """Fire the state's ``on_delete`` transfer."""
    return await facades.inventory.delete_instance_async(
        ctx, entity, ref, current_version=current_version, thread=run_change
    )


@router.get("/{entity}/{ref}/log")
def instance_log(
    entity: EntityName, ref: InstanceRef, request: Request, facades: FacadesDep, ctx: ContextDep
) -> list[EventOut]:
    """The instance's event log, oldest first."""
    return [shown_event(request, e) for e in facades.inventory.instance_log(ctx, entity, ref)]


@router.get("/{entity}/{ref}/resources")
def instance_resources(
    entity: EntityName, ref: InstanceRef, facades: FacadesDep, ctx: ContextDep
) -> list[InstanceResourceOut]:
    """The instance's resources and their deploy state."""
    return facades.inventory.instance_resources(ctx, entity, ref)


@router.get("/{entity}/{ref}/diagnose")
def diagnose(
    entity: EntityName, ref: InstanceRef, request: Request, facades: FacadesDep, ctx: ContextDep
) -> DiagnosisOut:
    """Why the instance is where it is: the causal chain from the symptom to the root cause and
    its one-line summary, then the facts (allowed transfers, compiles, failed resources)."""
    return shown_diagnosis(request, facades.inventory.diagnose(ctx, entity, ref))
