"""``/api/v1/compiles``: request compiles (full or partial, optionally waiting) and read reports."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from lsm.api.deps import ContextDep, FacadesDep
from lsm.inventory.views import CompileOut

router = APIRouter(prefix="/api/v1/compiles", tags=["compiles"])


class CompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["full", "partial"] = "full"
    instance_ids: list[str] | None = Field(None, description="Partial: these instances (and their trees).")
    service_entities: list[str] | None = Field(None, description="Partial: every instance of these entities.")
    exclude: list[str] | None = Field(None, description="Instance ids left out of the request.")
    wait: bool = Field(False, description="Answer only when the compile finished.")


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
