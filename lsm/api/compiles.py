"""``/api/v1/compiles``: request compiles (full or partial, optionally waiting), explain a selection,
and read reports."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.disclosure import shown_compile
from lsm.api.params import Id, Offset
from lsm.api.responses import CHANGE, READ, errors
from lsm.errors import InvalidInput
from lsm.schemas.auth import Role
from lsm.schemas.compile_reports import CompileOut, CompileRequest
from lsm.schemas.compiles import CompileKind, CompileStatus

router = APIRouter(
    prefix="/api/v1/compiles",
    tags=["compiles"],
    dependencies=[require(Role.VIEWER, write=Role.OPERATOR)],
    responses=errors(*READ),
)


@router.post("", response_model=None, responses=errors(*CHANGE))
async def request_compile(
    body: CompileRequest, request: Request, facades: FacadesDep, ctx: ContextDep
) -> CompileOut | dict[str, Any]:
    """Request a compile; the report, final when ``wait`` was given (or as it stands at ``timeout``);
    with ``explain``, what a partial compile would select and why (nothing is queued).

    Async so that a waiting request holds no worker thread: only the database reads run in one.
    """
    if body.explain:
        if body.kind != "partial":
            raise InvalidInput("only a partial compile can be explained", field="explain")
        return await run_in_threadpool(
            partial(
                facades.compiles.explain_compile,
                ctx,
                instance_ids=body.instance_ids,
                service_entities=body.service_entities,
                exclude=body.exclude,
                selector=body.selector,
            )
        )
    queued = await run_in_threadpool(
        partial(
            facades.compiles.request_compile,
            ctx,
            kind=body.kind,
            instance_ids=body.instance_ids,
            service_entities=body.service_entities,
            exclude=body.exclude,
            incremental=body.incremental,
            selector=body.selector,
        )
    )
    if not body.wait:
        return shown_compile(request, queued)
    return shown_compile(
        request, await facades.compiles.wait_for_compile_async(ctx, queued.id, timeout=body.timeout)
    )


@router.get("")
def list_compiles(
    request: Request,
    facades: FacadesDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Offset = 0,
    kind: Annotated[CompileKind | None, Query(description="Only compiles of this kind.")] = None,
    status: Annotated[CompileStatus | None, Query(description="Only compiles with this status.")] = None,
) -> list[CompileOut]:
    """The queue and the history, newest first; optionally of one kind and/or one status.

    ``status=queued&limit=1`` is the cheap question "is anything still to do?" (a poller asks it
    without reading the history).
    """
    compiles = facades.compiles.list_compiles(ctx, limit=limit, offset=offset, kind=kind, status=status)
    return [shown_compile(request, c) for c in compiles]


@router.get("/selectors")
def list_selectors(facades: FacadesDep, ctx: ContextDep) -> list[dict[str, Any]]:
    """The selectors the environment can name, with their parameters."""
    return facades.compiles.list_selectors(ctx)


@router.get("/{compile_id}")
def get_compile(compile_id: Id, request: Request, facades: FacadesDep, ctx: ContextDep) -> CompileOut:
    """One compile report."""
    return shown_compile(request, facades.compiles.get_compile(ctx, compile_id))


@router.post("/{compile_id}/retry", responses=errors(*CHANGE))
def retry_compile(compile_id: Id, request: Request, facades: FacadesDep, ctx: ContextDep) -> CompileOut:
    """Queue a failed exporting compile again (the same kind, ids, entities and selector); the
    new request. 404 for an unknown compile, 409 for a validation compile or one that did not fail.

    Once the retry exports, the instances its failure moved on (``failed``, ``update_failed``,
    ``delete_failed``) go on when their resources are deployed.
    """
    return shown_compile(request, facades.compiles.retry_compile(ctx, compile_id))
