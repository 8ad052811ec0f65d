"""``/api/v1/webhooks``: receivers of the environment's events, and their delivery logs.

Registering (or removing, or pinging) a URL that will receive the environment's data is an
admin's act; an operator may list webhooks and read their delivery logs. The secret is in the
answer of the creation only.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.responses import CHANGE, READ, errors
from lsm.schemas.auth import Role
from lsm.schemas.limits import MAX_PAGE
from lsm.schemas.webhooks import CreateWebhook, DeliveryOut, WebhookCreated, WebhookOut

router = APIRouter(
    prefix="/api/v1/webhooks",
    tags=["webhooks"],
    dependencies=[require(Role.OPERATOR, write=Role.ADMIN)],
    responses=errors(*READ),
)

HookId = Annotated[str, Path(max_length=36, pattern=r"^[0-9a-fA-F-]+$")]


@router.post("", responses=errors(*CHANGE))
def create_webhook(body: CreateWebhook, facades: FacadesDep, ctx: ContextDep) -> WebhookCreated:
    """Register a receiver for events from now on (``events``: kinds; default state changes,
    compile outcomes and deploy failures); the answer holds the signing secret, once."""
    return facades.webhooks.create(ctx, body)


@router.get("")
def list_webhooks(facades: FacadesDep, ctx: ContextDep) -> list[WebhookOut]:
    """The environment's webhooks; never a secret."""
    return facades.webhooks.list_webhooks(ctx)


@router.get("/{webhook_id}")
def get_webhook(webhook_id: HookId, facades: FacadesDep, ctx: ContextDep) -> WebhookOut:
    """One webhook; never its secret."""
    return facades.webhooks.get(ctx, webhook_id)


@router.delete("/{webhook_id}", responses=errors(*CHANGE))
def delete_webhook(webhook_id: HookId, facades: FacadesDep, ctx: ContextDep) -> WebhookOut:
    """Remove a webhook: nothing more is sent to it; its delivery log stays readable."""
    return facades.webhooks.delete(ctx, webhook_id)


@router.post("/{webhook_id}/test", responses=errors(*CHANGE))
def ping_webhook(webhook_id: HookId, facades: FacadesDep, ctx: ContextDep) -> DeliveryOut:
    """Queue a signed ``ping`` delivery to the receiver (check its signature verification)."""
    return facades.webhooks.ping(ctx, webhook_id)


@router.get("/{webhook_id}/deliveries")
def list_deliveries(
    webhook_id: HookId,
    facades: FacadesDep,
    ctx: ContextDep,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> list[DeliveryOut]:
    """The webhook's deliveries, newest first, each with its status and attempts."""
    return facades.webhooks.deliveries(ctx, webhook_id, limit=limit, offset=offset)
