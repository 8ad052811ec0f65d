"""The instance page's danger zone: expert force state, attribute sets and destroy.

Shown to admins while the environment's ``expert_mode`` is on (``instance.expert_zone``); the
posts need the admin role whatever the page showed, and go to the same facade calls as the
API's expert routes, so the setting, the reason, the version check, the event line and the
audit record are the orchestration's (``lsm.orchestration.expert``), not the console's.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from lsm.api.console.forms import read_form
from lsm.api.console.instance import _act
from lsm.api.console.routing import ConsoleRoute
from lsm.api.console.session import console_require, context_of
from lsm.api.deps import get_facades
from lsm.errors import InvalidInput
from lsm.schemas.auth import Role

router = APIRouter(
    include_in_schema=False, route_class=ConsoleRoute, dependencies=[console_require(Role.ADMIN)]
)

SET_NAMES = ("candidate", "active", "rollback")


@router.post("/inventory/{entity}/{ref}/expert/state")
async def expert_state(request: Request, entity: str, ref: str) -> Response:
    fields = await read_form(request)
    facades, ctx = get_facades(request), context_of(request)
    state, reason = fields.get("state", ""), fields.get("reason", "")

    def call(had: int) -> Any:
        return facades.inventory.expert_state(
            ctx, entity, ref, current_version=had, state=state, reason=reason
        )

    return await _act(request, entity, ref, fields, {"expert state": state}, call)


@router.post("/inventory/{entity}/{ref}/expert/attributes")
async def expert_attributes(request: Request, entity: str, ref: str) -> Response:
    fields = await read_form(request)
    facades, ctx = get_facades(request), context_of(request)
    name, text, reason = fields.get("set", ""), fields.get("value", ""), fields.get("reason", "")

    def call(had: int) -> Any:
        if name not in SET_NAMES:
            raise InvalidInput(f"choose one of {', '.join(SET_NAMES)}", field="set")
        try:
            value = json.loads(text)
        except ValueError:
            raise InvalidInput("the set must be a JSON object, or null to empty it", field="value") from None
        return facades.inventory.expert_attributes(
            ctx, entity, ref, current_version=had, sets={name: value}, reason=reason
        )

    return await _act(request, entity, ref, fields, {f"expert {name}": text}, call)


@router.post("/inventory/{entity}/{ref}/expert/destroy")
async def expert_destroy(request: Request, entity: str, ref: str) -> Response:
    fields = await read_form(request)
    facades, ctx = get_facades(request), context_of(request)
    purge, reason = fields.get("purge_resources") == "on", fields.get("reason", "")

    def call(had: int) -> Any:
        return facades.inventory.expert_destroy(
            ctx, entity, ref, current_version=had, reason=reason, purge_resources=purge
        )

    return await _act(request, entity, ref, fields, {"expert destroy": True}, call)
