"""The console's instance page (``/inventory/{entity}/{ref}``) and its actions.

The page shows the three attribute sets side by side with the differences marked, the event log
as a timeline linking each step's compile, the resources with their deploy status and last
error, the ownership tree one step up and down, why the instance is where it is (the diagnosis),
and the forms its state allows: update (``on_update``), set state (``api_set_state`` targets)
and delete (``on_delete``). Each form sends the ``current_version`` the page was rendered with;
a 409 comes back as an explanation (``lsm.api.console.views.conflict_story``). The actions call
``InventoryFacade`` like the API's routes: the console decides nothing.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.access import Scope, check
from lsm.api.console.bounds import field_rules
from lsm.api.console.drawing import owner_tree_svg
from lsm.api.console.forms import read_form
from lsm.api.console.inventory import error_view
from lsm.api.console.names import Namer, identity_text
from lsm.api.console.render import page
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.console.views import (
    ConflictStory,
    attribute_values,
    conflict_story,
    field_text,
    side_by_side,
)
from lsm.api.deps import get_facades
from lsm.api.disclosure import shown_diagnosis, shown_event, shows_details
from lsm.errors import InvalidInput, LsmError, UnknownInstance, VersionConflict
from lsm.facade import Facades, RequestContext
from lsm.schemas.auth import Role
from lsm.schemas.inventory import InstanceOut
from lsm.schemas.limits import MAX_INT

router = APIRouter(
    include_in_schema=False,
    route_class=ConsoleRoute,
    dependencies=[console_require(Role.VIEWER, write=Role.OPERATOR)],
)

#: owned instances shown on the page (the rest: the owned entity's inventory)
OWNED_SHOWN = 50
#: event log lines drawn on the timeline, newest first (the whole log: the API's ``.../log``)
TIMELINE_SHOWN = 200


def instance_view(facades: Facades, ctx: RequestContext, entity: str, ref: str) -> dict[str, Any]:
    """Everything the instance page shows: the instance and what is about it in one snapshot
    (``InventoryFacade.instance_page``), its entity and its owner."""
    found = facades.catalog.get_entity(ctx, entity, summary=False)
    shown = facades.inventory.instance_page(ctx, entity, ref, owned_limit=OWNED_SHOWN + 1)
    instance, diagnosis, log, resources, owned = (
        shown.instance,
        shown.diagnosis,
        shown.log,
        shown.resources,
        shown.owned,
    )
    owner = None
    if instance.owner and found.owner:
        try:
            owner = facades.inventory.get_instance(ctx, found.owner, instance.owner)
        except UnknownInstance:
            owner = None
    owned_entities = sorted({i.service_entity for i in owned})
    namer = Namer(facades, ctx)  # owner and owned by their identity (lsm.api.console.names)

    def named(other: InstanceOut) -> str | None:
        found_entity = namer.entity(other.service_entity)
        return identity_text(found_entity, other) if found_entity is not None else None

    labels = {s.name: s.label for s in found.lifecycle.states}
    allowed = diagnosis.allowed
    editable = instance.candidate_attributes or instance.active_attributes or {}
    return {
        "entity": found,
        "instance": instance,
        "rows": side_by_side(instance),
        "log": log[-TIMELINE_SHOWN:],
        "log_total": len(log),
        "resources": resources,
        "diagnosis": diagnosis,
        "owner": owner,
        "owned": owned[:OWNED_SHOWN],
        "owned_more": len(owned) > OWNED_SHOWN,
        "owned_entities": owned_entities,
        "identities": {i.id: named(i) for i in [*owned[:OWNED_SHOWN], *([owner] if owner else [])]},
        "labels": labels,
        "can_update": any(a.trigger == "on_update" for a in allowed),
        "can_delete": any(a.trigger == "on_delete" for a in allowed),
        "set_state_targets": sorted({a.target for a in allowed if a.trigger == "api_set_state"}),
        "seen": json.dumps(editable, sort_keys=True),
        "values": {a.name: field_text(a, editable.get(a.name)) for a in found.attributes},
        "owner_svg": owner_tree_svg(facades, ctx, entity, instance.id) if (owner or owned) else None,
        "rules": field_rules(facades.catalog.entity_schema(ctx, entity)),
    }


async def render(
    request: Request,
    entity: str,
    ref: str,
    *,
    status_code: int = 200,
    conflict: ConflictStory | None = None,
    error: dict[str, Any] | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    ctx = context_of(request)
    view = await run_in_threadpool(instance_view, get_facades(request), ctx, entity, ref)
    # the API's disclosure rules (``lsm.api.disclosure``): event lines and the diagnosis name no
    # server path
    details = await run_in_threadpool(shows_details, request)
    view["log"] = [shown_event(request, e, details=details) for e in view["log"]]
    view["diagnosis"] = shown_diagnosis(request, view["diagnosis"], details=details)
    view["expert"] = await run_in_threadpool(expert_zone, get_facades(request), ctx)
    if values is not None:
        view["values"] = {**view["values"], **values}
    canonical = f"/inventory/{entity}/{view['instance'].id}"
    return page(
        request,
        "instance.html",
        status_code=status_code,
        conflict=conflict,
        error=error,
        canonical=canonical,
        **view,
    )


@router.get("/inventory/{entity}/{ref}")
async def show(request: Request, entity: str, ref: str) -> Response:
    return await render(request, entity, ref)


def expert_zone(facades: Facades, ctx: RequestContext) -> bool:
    """Whether the page shows its danger zone (``lsm.api.console.expert``): to an admin of the
    environment, while its ``expert_mode`` setting is on."""
    try:
        check(Scope.ENVIRONMENT, Role.ADMIN, ctx, facades)
    except LsmError:
        return False
    return facades.inventory.expert_mode(ctx)


def form_version(fields: dict[str, str]) -> int:
    """The form's ``current_version`` (a 422 naming it when missing or not a number)."""
    text = fields.get("current_version", "")
    try:
        value = int(text)
    except ValueError:
        raise InvalidInput("current_version must be a whole number", field="current_version") from None
    if not 0 <= value <= MAX_INT:
        raise InvalidInput(f"current_version must be 0..{MAX_INT}", field="current_version")
    return value


def form_seen(fields: dict[str, str]) -> dict[str, Any] | None:
    """The attributes the page showed when the form was rendered (``None``: not sent or not JSON)."""
    try:
        seen = json.loads(fields.get("seen", ""))
    except ValueError:
        return None
    return seen if isinstance(seen, dict) else None


async def _act(
    request: Request, entity: str, ref: str, fields: dict[str, str], attempted: dict[str, Any], call: Any
) -> Response:
    """Run ``call()`` (a facade change); redirect to the page, or show the page with the refusal."""
    ctx = context_of(request)
    facades = get_facades(request)
    values = {k.removeprefix("attr."): v for k, v in fields.items() if k.startswith("attr.")}
    try:
        had = form_version(fields)
        out = await run_in_threadpool(call, had)
    except VersionConflict as exc:
        current = await run_in_threadpool(facades.inventory.get_instance, ctx, entity, ref)
        log = await run_in_threadpool(facades.inventory.instance_log, ctx, entity, current.id)
        story = conflict_story(had, current, log, form_seen(fields), attempted)
        return await render(
            request, entity, ref, status_code=exc.status, conflict=story, error=error_view(exc), values=values
        )
    except LsmError as exc:
        if exc.status >= 500 or exc.status == 404:
            raise
        return await render(
            request, entity, ref, status_code=exc.status, error=error_view(exc), values=values
        )
    return RedirectResponse(f"/inventory/{entity}/{out.id}", status_code=303)


@router.post("/inventory/{entity}/{ref}/update")
async def update(request: Request, entity: str, ref: str) -> Response:
    """Update the attributes the form changed (compared with what the page showed)."""
    fields = await read_form(request)
    facades = get_facades(request)
    ctx = context_of(request)
    found = await run_in_threadpool(lambda: facades.catalog.get_entity(ctx, entity, summary=False))
    seen = form_seen(fields) or {}
    changed: dict[str, Any] = {}

    def call(had: int) -> Any:
        parsed = attribute_values(fields, found.attributes)
        changed.update({k: v for k, v in parsed.items() if seen.get(k, _UNSEEN) != v})
        if not changed:
            raise InvalidInput(
                "nothing to update: no attribute differs from what the page showed", field="attributes"
            )
        return facades.inventory.update_instance(ctx, entity, ref, current_version=had, attributes=changed)

    return await _act(request, entity, ref, fields, changed, call)


@router.post("/inventory/{entity}/{ref}/state")
async def set_state(request: Request, entity: str, ref: str) -> Response:
    fields = await read_form(request)
    facades = get_facades(request)
    ctx = context_of(request)
    target = fields.get("target_state", "")
    message = fields.get("message", "")[:2000]

    def call(had: int) -> Any:
        if not target:
            raise InvalidInput("choose a target state", field="target_state")
        return facades.inventory.set_state(
            ctx, entity, ref, current_version=had, target_state=target, message=message
        )

    return await _act(request, entity, ref, fields, {"target_state": target}, call)


@router.post("/inventory/{entity}/{ref}/delete")
async def delete(request: Request, entity: str, ref: str) -> Response:
    fields = await read_form(request)
    facades = get_facades(request)
    ctx = context_of(request)

    def call(had: int) -> Any:
        return facades.inventory.delete_instance(ctx, entity, ref, current_version=had)

    return await _act(request, entity, ref, fields, {"delete": True}, call)


_UNSEEN = object()
