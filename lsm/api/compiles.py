"""``/api/v1/compiles``: request compiles (full or partial, optionally waiting) and read reports."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from lsm.api.deps import EngineDep, EnvironmentDep
from lsm.inventory.views import CompileOut

router = APIRouter(prefix="/api/v1/compiles", tags=["compiles"])


class CompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["full", "partial"] = "full"
    instance_ids: list[str] | None = Field(None, description="Partial: these instances (and their trees).")
    service_entities: list[str] | None = Field(None, description="Partial: every instance of these entities.")
    exclude: list[str] | None = Field(None, description="Instance ids left out of the request.")
    wait: bool = Field(False, description="Answer only when the compile finished.")
    incremental: bool | None = Field(
        None,
        description="Full: false refines every tree (e.g. on suspected drift); by default only the "
        "trees whose instances changed are refined, once a version with the same model exists.",
    )


@router.post("")
def request_compile(body: CompileRequest, engine: EngineDep, env: EnvironmentDep) -> CompileOut:
    """Request a compile; the report, final when ``wait`` was given."""
    return engine.request_compile(
        env,
        kind=body.kind,
        instance_ids=body.instance_ids,
        service_entities=body.service_entities,
        exclude=body.exclude,
        wait=body.wait,
        incremental=body.incremental,
    )


@router.get("")
def list_compiles(
    engine: EngineDep,
    env: EnvironmentDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> list[CompileOut]:
    """The queue and the history, newest first."""
    return engine.list_compiles(env, limit=limit, offset=offset)


@router.get("/{compile_id}")
def get_compile(compile_id: str, engine: EngineDep, env: EnvironmentDep) -> CompileOut:
    """One compile report."""
    return engine.get_compile(env, compile_id)
