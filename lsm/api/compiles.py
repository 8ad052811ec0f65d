"""``/api/v1/compiles``: request compiles (full or partial, optionally waiting) and read reports."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from lsm.api.deps import EngineDep, EnvironmentDep
from lsm.errors import InvalidInput
from lsm.inventory.views import CompileOut

router = APIRouter(prefix="/api/v1/compiles", tags=["compiles"])


class CompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["full", "partial"] = "full"
    instance_ids: list[str] | None = Field(None, description="Partial: these instances (and their trees).")
    service_entities: list[str] | None = Field(None, description="Partial: every instance of these entities.")
    exclude: list[str] | None = Field(None, description="Instance ids left out of the request.")
    wait: bool = Field(False, description="Answer only when the compile finished.")
    selector: str | dict[str, Any] | list[str | dict[str, Any]] | None = Field(
        None, description="Partial: the selector for this compile (name, {name, params}, or a union list)."
    )
    explain: bool = Field(
        False, description="Partial: answer what would be selected and why; nothing is queued (dry run)."
    )


@router.post("", response_model=None)
def request_compile(
    body: CompileRequest, engine: EngineDep, env: EnvironmentDep
) -> CompileOut | dict[str, Any]:
    """Request a compile; the report, final when ``wait`` was given (the selection with ``explain``)."""
    if body.explain:
        if body.kind != "partial":
            raise InvalidInput("only a partial compile can be explained", field="explain")
        return engine.explain_compile(
            env,
            instance_ids=body.instance_ids,
            service_entities=body.service_entities,
            exclude=body.exclude,
            selector=body.selector,
        )
    return engine.request_compile(
        env,
        kind=body.kind,
        instance_ids=body.instance_ids,
        service_entities=body.service_entities,
        exclude=body.exclude,
        wait=body.wait,
        selector=body.selector,
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


@router.get("/selectors")
def list_selectors(engine: EngineDep, env: EnvironmentDep) -> list[dict[str, Any]]:
    """The selectors the environment can name, with their parameters."""
    return engine.list_selectors(env)


@router.get("/{compile_id}")
def get_compile(compile_id: str, engine: EngineDep, env: EnvironmentDep) -> CompileOut:
    """One compile report."""
    return engine.get_compile(env, compile_id)
