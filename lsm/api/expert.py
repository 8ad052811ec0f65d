"""Expert routes: force a state, write attribute sets, destroy, for admins while ``expert_mode`` is on.

Why a router of its own: every route here needs the admin role (a 403 for an operator, even
while the setting is on), declared once below. The rules (the setting, the reason, the version
check, the event line and the audit record) are the orchestration's (``lsm.orchestration.expert``),
so the console and the API can not differ.
"""

from __future__ import annotations

from fastapi import APIRouter

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import EntityName, InstanceRef
from lsm.api.responses import CHANGE, READ, errors
from lsm.api.write_lane import run_change
from lsm.schemas.auth import Role
from lsm.schemas.expert import ExpertAttributesRequest, ExpertDestroyRequest, ExpertStateRequest
from lsm.schemas.inventory import InstanceOut

router = APIRouter(
    prefix="/lsm/v1/service_inventory",
    tags=["expert"],
    dependencies=[require(Role.ADMIN)],
    responses=errors(*READ),
)


@router.post("/{entity}/{ref}/expert/state", responses=errors(*CHANGE))
async def expert_state(
    entity: EntityName, ref: InstanceRef, body: ExpertStateRequest, facades: FacadesDep, ctx: ContextDep
) -> InstanceOut:
    """Move the instance to any state of its lifecycle; no transfer, validation or operation."""
    return await run_change(
        facades.inventory.expert_state,
        ctx,
        entity,
        ref,
        current_version=body.current_version,
        state=body.state,
        reason=body.reason,
    )


@router.post("/{entity}/{ref}/expert/attributes", responses=errors(*CHANGE))
async def expert_attributes(
    entity: EntityName, ref: InstanceRef, body: ExpertAttributesRequest, facades: FacadesDep, ctx: ContextDep
) -> InstanceOut:
    """Replace the candidate, active and/or rollback set, each checked against the entity's schema."""
    return await run_change(
        facades.inventory.expert_attributes,
        ctx,
        entity,
        ref,
        current_version=body.current_version,
        sets=body.sets(),
        reason=body.reason,
    )


@router.post("/{entity}/{ref}/expert/destroy", responses=errors(*CHANGE))
async def expert_destroy(
    entity: EntityName, ref: InstanceRef, body: ExpertDestroyRequest, facades: FacadesDep, ctx: ContextDep
) -> InstanceOut:
    """Terminate the instance at once without running a handler, its resources left or purged."""
    return await run_change(
        facades.inventory.expert_destroy,
        ctx,
        entity,
        ref,
        current_version=body.current_version,
        reason=body.reason,
        purge_resources=body.purge_resources,
    )
