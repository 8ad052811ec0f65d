"""``/api/v1/desired_state``: the desired-state versions and their resource sets; ``PUT`` stores an
export made outside the engine's compiles (``lsm export``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import Offset, Version
from lsm.api.responses import CHANGE, READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.desired_state import (
    DesiredStateDiffOut,
    DesiredStateExportIn,
    DesiredStateOut,
    DesiredStateResourceOut,
    DesiredStateVersionOut,
)
from lsm.schemas.limits import MAX_INT

router = APIRouter(
    prefix="/api/v1/desired_state",
    tags=["desired state"],
    dependencies=[require(Role.VIEWER, write=Role.OPERATOR)],
    responses=errors(*READ),
)


@router.get("")
def list_desired_states(
    facades: FacadesDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Offset = 0,
) -> list[DesiredStateVersionOut]:
    """Versions, newest first."""
    return facades.desired_state.list_desired_states(ctx, limit=limit, offset=offset)


@router.put("", responses=errors(*CHANGE))
def export_desired_state(
    body: DesiredStateExportIn, facades: FacadesDep, ctx: ContextDep
) -> DesiredStateVersionOut:
    """Store a full or partial export as the next version (docs/semantics.md §4: a rule broken
    is a 400 naming the rule, the resources and the sets, and nothing is written). The version
    is deployed like a compile's."""
    return facades.desired_state.export(ctx, body)


@router.get("/{version}")
def get_desired_state(version: Version, facades: FacadesDep, ctx: ContextDep) -> DesiredStateOut:
    """One version: its resource sets (name -> resource ids) and the shared ids."""
    return facades.desired_state.desired_state(ctx, version)


@router.get("/{version}/resources")
def get_desired_state_resources(
    version: Version, facades: FacadesDep, ctx: ContextDep
) -> list[DesiredStateResourceOut]:
    """The version's resources: id, set, attributes, requires."""
    return facades.desired_state.desired_state_resources(ctx, version)


@router.get("/{version}/diff/{other}")
def get_desired_state_diff(
    version: Version,
    other: Annotated[int, Path(ge=0, le=MAX_INT, description="The version to compare with.")],
    facades: FacadesDep,
    ctx: ContextDep,
) -> DesiredStateDiffOut:
    """What turns ``version`` into ``other``: sets added/removed/changed, then resources with
    their changed fields. Reads only the sets written between the two (copy-on-write)."""
    return facades.desired_state.desired_state_diff(ctx, version, other)
