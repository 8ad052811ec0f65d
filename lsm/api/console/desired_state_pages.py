"""Console pages of the desired state: ``/desired-state`` (versions, newest first, paged),
``/desired-state/{v}`` (its sets and their resources) and ``/desired-state/{a}/diff/{b}``.

The difference page is ``DesiredStateFacade.desired_state_diff``: it costs the sets written
between the two versions (``lsm.desired_state.diff``), so comparing two neighbours of a
100,000-set environment is as quick as of a small one. Version numbers come from the URL as
text and are parsed here, so a bad one is a 422 page naming it rather than a JSON body.

Cost: the list pages by 50 versions; a version's page reads its set -> resource ids map
(``DesiredStateStore.content``: one indexed read of the version's rows, so it grows with the
version -- a page opened by hand, never polled) and shows 50 sets per page; one set's
resources (``?set=``) are read through the set index.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.drawing import requires_svg, sets_svg
from lsm.api.console.operations import PAGE_SIZE, int_param, ops_page, pager, text_param
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.errors import InvalidInput
from lsm.schemas.auth import Role
from lsm.schemas.desired_state import ResourceChangeOut
from lsm.schemas.limits import MAX_INT

router = APIRouter(
    include_in_schema=False, route_class=ConsoleRoute, dependencies=[console_require(Role.VIEWER)]
)


def version_number(raw: str, name: str) -> int:
    """A version number from the URL; ``InvalidInput`` naming ``name`` when it is not one."""
    if not raw.isdigit() or len(raw) > 12 or int(raw) > MAX_INT:
        raise InvalidInput(f"{name} must be a desired-state version number, not {raw[:40]!r}", field=name)
    return int(raw)


@router.get("/desired-state")
async def versions(request: Request) -> Response:
    offset = int_param(request, "offset", 0)
    found = await run_in_threadpool(
        get_facades(request).desired_state.list_desired_states,
        context_of(request),
        limit=PAGE_SIZE,
        offset=offset,
    )
    newest = found[0].version if found and offset == 0 else None
    return ops_page(
        request,
        "ops_versions.html",
        versions=found,
        pages=pager(request, offset, len(found)),
        pick_a=(newest - 1) if newest and newest > 1 else "",
        pick_b=newest or "",
    )


@router.get("/desired-state/diff")
def pick_diff(request: Request) -> Response:
    """The form of ``/desired-state``: go to the difference of the two versions picked."""
    a = version_number(request.query_params.get("a", ""), "a")
    b = version_number(request.query_params.get("b", ""), "b")
    return RedirectResponse(f"/desired-state/{a}/diff/{b}", status_code=303)


@router.get("/desired-state/{version}")
async def version_page(request: Request, version: str) -> Response:
    number = version_number(version, "version")
    one_set = text_param(request, "set")
    facade, ctx = get_facades(request).desired_state, context_of(request)
    found = await run_in_threadpool(facade.desired_state, ctx, number)
    offset = int_param(request, "offset", 0)
    names = list(found.sets)
    shown = names[offset : offset + PAGE_SIZE]
    resources = None
    if one_set is not None:
        if one_set not in found.sets:
            raise InvalidInput(f"version {number} has no set {one_set!r}", field="set")
        resources = await run_in_threadpool(facade.desired_state_resources, ctx, number, set_name=one_set)
        picture = await run_in_threadpool(requires_svg, get_facades(request), ctx, number, one_set)
    else:
        picture = await run_in_threadpool(sets_svg, get_facades(request), ctx, number)
    return ops_page(
        request,
        "ops_version.html",
        version=found,
        sets=[(name, found.sets[name]) for name in shown],
        set_total=len(names),
        one_set=one_set,
        resources=resources,
        picture=picture,
        pages=pager(request, offset, len(shown)),
    )


@router.get("/desired-state/{version}/diff/{other}")
async def diff_page(request: Request, version: str, other: str) -> Response:
    a, b = version_number(version, "version"), version_number(other, "other")
    diff = await run_in_threadpool(
        get_facades(request).desired_state.desired_state_diff, context_of(request), a, b
    )
    return ops_page(
        request,
        "ops_diff.html",
        diff=diff,
        rows=[_resource_row(r) for r in diff.resources],
        counts={c: sum(r.change == c for r in diff.resources) for c in ("added", "removed", "changed")},
    )


def _resource_row(change: ResourceChangeOut) -> dict[str, Any]:
    """One resource of the difference with, per attribute, its two values and whether it changed."""
    before = change.before.attributes if change.before else {}
    after = change.after.attributes if change.after else {}
    changed = set(change.fields)
    names = sorted(before.keys() | after.keys())
    return {
        "change": change,
        "set_before": change.before.set if change.before else None,
        "set_after": change.after.set if change.after else None,
        "name_before": change.before.set_name if change.before else None,
        "name_after": change.after.set_name if change.after else None,
        "attributes": [
            {
                "name": name,
                "before": before.get(name),
                "after": after.get(name),
                "has_before": name in before,
                "has_after": name in after,
                "changed": name in changed,
            }
            for name in names
        ],
        "requires_before": change.before.requires if change.before else [],
        "requires_after": change.after.requires if change.after else [],
    }
