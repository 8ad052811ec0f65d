"""Console pages of an entity's inventory: the list (``/inventory/{entity}``) and the order form.

The list filters by state, searches by id, by identity (a part of it, any case) and by one
attribute's value through the API's search (``InventoryFacade.list_instances``: the server
searches, not the page), sorts on the server, pages with ``limit``/``offset``, and refreshes
itself from the event stream (``static/console.js``). The order form posts to
``POST /inventory/{entity}``, which calls ``InventoryFacade.create_instance`` exactly as the API
does; a refused order shows the form again with the engine's typed error naming the attribute.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from lsm.api.console.bounds import field_rules
from lsm.api.console.forms import read_form
from lsm.api.console.names import Namer, attributes_of, identity_text, reference_choices
from lsm.api.console.render import page
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.console.views import attribute_values
from lsm.api.deps import get_facades
from lsm.api.disclosure import redact
from lsm.errors import InvalidAttributes, InvalidInput, LsmError, UnknownInstance
from lsm.facade import RequestContext
from lsm.schemas.auth import Role
from lsm.schemas.catalog import EntityOut
from lsm.schemas.inventory import InstanceOut
from lsm.schemas.limits import MAX_IDENTITY_LENGTH

router = APIRouter(
    include_in_schema=False,
    route_class=ConsoleRoute,
    dependencies=[console_require(Role.VIEWER, write=Role.OPERATOR)],
)

PAGE_SIZES = (20, 50, 100, 200)

#: an instance id as typed in the search box: looked up by id before any identity search
_ID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter in ``low..high``; anything else is a 422 naming it."""
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {text[:40]!r}", field=name) from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be {low}..{high}", field=name)
    return value


@router.get("/inventory")
def entities(request: Request) -> Response:
    found = get_facades(request).catalog.list_entities(context_of(request))
    return page(request, "overview.html", entities=found)  # the counts per state: the overview's point


#: the sorts the inventory page offers (the API's ``sort``; ``-key``: descending)
SORTS = ("created_at", "-created_at", "identity", "-identity", "state", "-state", "-last_updated", "-version")


def _by_id(request: Request, entity: EntityOut, query: str) -> list[InstanceOut]:
    """The instance whose id is exactly ``query`` (none: an empty list)."""
    try:
        return [get_facades(request).inventory.get_instance(context_of(request), entity.name, query)]
    except (UnknownInstance, InvalidInput):
        return []


def _match(request: Request, entity: EntityOut) -> tuple[str, str]:
    """The attribute search of the page (``where`` = ``equals``), checked: a 422 naming it."""
    where = request.query_params.get("where", "").strip()
    equals = request.query_params.get("equals", "")
    if where and where not in {a.name for a in entity.attributes}:
        raise InvalidInput(f"{entity.name} has no attribute {where[:80]!r}", field="where")
    return where, equals


@router.get("/inventory/{entity}")
def instances(request: Request, entity: str) -> Response:
    """The instances of ``entity``: state filter, search by identity and by attribute (the API's
    search, on the server), sort, paging, live refresh."""
    facades = get_facades(request)
    ctx = context_of(request)
    found = facades.catalog.get_entity(ctx, entity, summary=False)
    limit = int_param(request, "limit", 50, 1, 500)
    offset = int_param(request, "offset", 0, 0, 10_000_000)
    known = [s.name for s in found.lifecycle.states]
    states = [s for s in request.query_params.getlist("state") if s]
    unknown = [s for s in states if s not in known]
    if unknown:
        raise InvalidInput(f"unknown state(s) {unknown} for lifecycle {found.lifecycle.name}", field="state")
    query = request.query_params.get("q", "").strip()[:MAX_IDENTITY_LENGTH]
    where, equals = _match(request, found)
    sort = request.query_params.get("sort") or "created_at"
    if sort not in SORTS:
        raise InvalidInput(f"sort must be one of {', '.join(SORTS)}", field="sort")
    rows = _by_id(request, found, query) if query and _ID.fullmatch(query) else []
    more = False
    if not rows and (not query or found.identity):  # text that is no id searches the identity
        rows = facades.inventory.list_instances(
            ctx,
            entity,
            states=states or None,
            limit=limit + 1,
            offset=offset,
            sort=sort,
            identity=query or None,
            attributes=[f"{where}={equals}"] if where else None,
        )
        more = len(rows) > limit
        rows = rows[:limit]
    labels = {s.name: s.label for s in found.lifecycle.states}
    columns, table = summary_rows(Namer(facades, ctx), found, rows)
    searched = [("q", query), ("where", where), ("equals", equals)] if query or where else []

    def at(start: int) -> str:
        return f"/inventory/{entity}?" + urlencode(
            [*(("state", s) for s in states), *searched, ("sort", sort), ("limit", limit), ("offset", start)]
        )

    return page(
        request,
        "inventory.html",
        entity=found,
        rows=rows,
        columns=columns,
        table=table,
        labels=labels,
        states=states,
        known_states=known,
        query=query,
        where=where,
        equals=equals,
        sort=sort,
        sorts=SORTS,
        limit=limit,
        offset=offset,
        page_sizes=PAGE_SIZES,
        prev_url=at(max(offset - limit, 0)) if offset > 0 else None,
        next_url=at(offset + limit) if more else None,
    )


def summary_rows(
    namer: Namer, entity: EntityOut, rows: list[InstanceOut]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The summary columns (the binding's ``summary`` but the identity and the owner, which have
    their own) and per row: its identity, its owner and each column's value, a reference shown
    as the identity of the instance it points to (``lsm.api.console.names``)."""
    columns = [a for a in entity.summary if a not in (entity.identity, entity.relation_to_owner)]
    targets = {r.attribute: r.target for r in entity.relations}  # binding names
    table = []
    for row in rows:
        values = attributes_of(row)
        cells: dict[str, Any] = {}
        for name in columns:
            value = values.get(name)
            target = targets.get(name)
            if target is not None and isinstance(value, str):
                cells[name] = namer.name(target, value)
            elif target is not None and isinstance(value, list):
                cells[name] = [namer.name(target, str(v)) for v in value]
            else:
                cells[name] = "" if value is None else str(value)[:120]
        owner = namer.name(entity.owner, row.owner) if entity.owner and row.owner else None
        table.append(
            {"instance": row, "identity": identity_text(entity, row), "owner": owner, "cells": cells}
        )
    return columns, table


@router.get("/inventory/{entity}/new")
def order_form(request: Request, entity: str) -> Response:
    facades, ctx = get_facades(request), context_of(request)
    found = facades.catalog.get_entity(ctx, entity, summary=False)
    choices = reference_choices(Namer(facades, ctx), found)
    rules = field_rules(facades.catalog.entity_schema(ctx, entity))
    return page(request, "order.html", entity=found, values={}, error=None, choices=choices, rules=rules)


@router.post("/inventory/{entity}")
async def order(request: Request, entity: str) -> Response:
    """Create an instance from the order form; on success go to its page."""
    fields = await read_form(request)
    facades = get_facades(request)
    ctx = context_of(request)
    found = await run_in_threadpool(lambda: facades.catalog.get_entity(ctx, entity, summary=False))
    values = {k.removeprefix("attr."): v for k, v in fields.items() if k.startswith("attr.")}
    try:
        attributes = attribute_values(fields, found.attributes)
        created = await run_in_threadpool(_create, facades.inventory, ctx, entity, attributes)
    except LsmError as exc:
        if exc.status >= 500:
            raise
        choices = await run_in_threadpool(reference_choices, Namer(facades, ctx), found)
        rules = field_rules(await run_in_threadpool(facades.catalog.entity_schema, ctx, entity))
        return page(
            request,
            "order.html",
            status_code=exc.status,
            entity=found,
            values=values,
            error=error_view(exc),
            choices=choices,
            rules=rules,
        )
    return RedirectResponse(f"/inventory/{entity}/{created.id}", status_code=303)


def _create(inventory: Any, ctx: RequestContext, entity: str, attributes: dict[str, Any]) -> InstanceOut:
    out: InstanceOut = inventory.create_instance(ctx, entity, attributes)
    return out


def error_view(exc: LsmError) -> dict[str, Any]:
    """An engine error as a form shows it: the message, and per attribute what is wrong."""
    body = redact(exc.to_body())
    per_field: dict[str, str] = {}
    if isinstance(exc, InvalidAttributes):
        for item in exc.errors:
            per_field.setdefault(str(item.get("path", "")).split(".")[0], redact(str(item.get("reason", ""))))
    return {"status": exc.status, "kind": exc.kind, "message": body.get("message", ""), "fields": per_field}
