"""``/api/v1/compiles``: request compiles (full or partial, optionally waiting) and read reports."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from lsm.api.deps import ContextDep, FacadesDep
from lsm.schemas.compile_reports import CompileOut, CompileRequest

router = APIRouter(prefix="/api/v1/compiles", tags=["compiles"])


@router.post("")
def request_compile(body: CompileRequest, facades: FacadesDep, ctx: ContextDep) -> CompileOut:
    """Request a compile; the report, final when ``wait`` was given."""
    return facades.compiles.request_compile(
        ctx,
        kind=body.kind,
        instance_ids=body.instance_ids,
        service_entities=body.service_entities,
        exclude=body.exclude,
        wait=body.wait,
        timeout=body.timeout,
    )


@router.get("")
def list_compiles(
    facades: FacadesDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> list[CompileOut]:
    """The queue and the history, newest first."""
    return facades.compiles.list_compiles(ctx, limit=limit, offset=offset)


@router.get("/{compile_id}")
def get_compile(compile_id: str, facades: FacadesDep, ctx: ContextDep) -> CompileOut:
    """One compile report."""
    return facades.compiles.get_compile(ctx, compile_id)
