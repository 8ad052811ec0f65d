"""Webhooks as the API serves them: register, list, show, remove, ping, and the delivery log.

Why here: the facade resolves the request's environment, starts a new webhook at the feed's
present (``EventsFacade.present``: no replay of the backlog), generates the secret when none
is given and shows it once, refuses a target on an internal address unless the server allows
them (``lsm.webhooks.targets``), and writes the audit line in the transaction of the change. The
dispatching and sending run in the service loop (``lsm.services.webhook_dispatch``,
``lsm.services.webhook_send``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

from lsm.errors import NotFound
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.events import EventsFacade
from lsm.schemas.webhooks import AttemptOut, CreateWebhook, DeliveryOut, WebhookCreated, WebhookOut
from lsm.store import audit
from lsm.store.batches import utc
from lsm.store.tables import utcnow
from lsm.store.webhooks import statements as store
from lsm.webhooks.targets import check_registration

#: the event kind of ``POST /api/v1/webhooks/{id}/test``
PING = "ping"


def webhook_out(row: dict[str, Any]) -> WebhookOut:
    created = utc(row["created_at"])
    assert created is not None
    return WebhookOut(
        id=row["id"],
        url=row["url"],
        events=list(row["events"]),
        active=bool(row["active"]),
        created_at=created,
        created_by=row["created_by"],
    )


def delivery_out(row: dict[str, Any], attempts: list[dict[str, Any]]) -> DeliveryOut:
    created = utc(row["created_at"])
    assert created is not None
    return DeliveryOut(
        id=row["id"],
        webhook_id=row["webhook_id"],
        event=row["event_kind"],
        event_key=row["event_key"],
        status=row["status"],
        attempts=row["attempts"],
        next_attempt_at=utc(row["next_attempt_at"]) if row["status"] == "pending" else None,
        last_status_code=row["last_status_code"],
        last_error=row["last_error"],
        created_at=created,
        delivered_at=utc(row["delivered_at"]),
        payload=row["payload"],
        attempt_log=[
            AttemptOut(
                attempted_at=utc(a["attempted_at"]) or created,
                status_code=a["status_code"],
                error=a["error"],
                duration_ms=a["duration_ms"],
            )
            for a in attempts
        ],
    )


class WebhooksFacade:
    """Register and inspect an environment's webhooks. ``wake``: the dispatcher of this process
    looks at the feed now (a new webhook, a ping); ``allow_internal``: targets on internal
    addresses are accepted (``[webhooks] allow_internal``)."""

    def __init__(
        self,
        core: Core,
        events: EventsFacade,
        *,
        wake: Callable[[], None] = lambda: None,
        allow_internal: bool = False,
    ) -> None:
        self.core = core
        self.events = events
        self.wake = wake
        self.allow_internal = allow_internal

    def _env(self, ctx: RequestContext) -> str:
        return self.core.environments.context(ctx.environment).env_id

    def create(self, ctx: RequestContext, body: CreateWebhook) -> WebhookCreated:
        """A new webhook receiving what happens from now on; its secret is in this answer only."""
        env_id = self._env(ctx)
        if not self.allow_internal:
            check_registration(body.url)
        secret = body.secret or secrets.token_urlsafe(32)
        cursor = self.events.present(env_id).encode()
        events: list[str] = list(dict.fromkeys(body.events))
        with self.core.db.write() as session:
            row = store.create(
                session.connection(),
                env_id=env_id,
                url=body.url,
                events=events,
                secret=secret,
                cursor=cursor,
                created_by=ctx.actor,
                now=utcnow(),
            )
            audit.record(
                session,
                actor=ctx.actor,
                request_id=ctx.request_id,
                action="webhook.create",
                target=row["id"],
                env_id=env_id,
                url=body.url,
                events=events,
            )
        return WebhookCreated(**webhook_out(row).model_dump(), secret=secret)

    def list_webhooks(self, ctx: RequestContext) -> list[WebhookOut]:
        env_id = self._env(ctx)
        with self.core.db.read() as session:
            return [webhook_out(row) for row in store.list_active(session.connection(), env_id)]

    def get(self, ctx: RequestContext, hook_id: str) -> WebhookOut:
        env_id = self._env(ctx)
        with self.core.db.read() as session:
            return webhook_out(self._found(session.connection(), env_id, hook_id))

    def delete(self, ctx: RequestContext, hook_id: str) -> WebhookOut:
        """Remove a webhook: nothing more is queued for it, its pending deliveries are cancelled."""
        env_id = self._env(ctx)
        with self.core.db.write() as session:
            conn = session.connection()
            row = self._found(conn, env_id, hook_id)
            store.deactivate(conn, env_id, hook_id, utcnow())
            audit.record(
                session,
                actor=ctx.actor,
                request_id=ctx.request_id,
                action="webhook.delete",
                target=hook_id,
                env_id=env_id,
                url=row["url"],
            )
        return webhook_out({**row, "active": False})

    def ping(self, ctx: RequestContext, hook_id: str) -> DeliveryOut:
        """Queue a ``ping`` delivery (to check the receiver and its signature check)."""
        env_id = self._env(ctx)
        now = utcnow()
        new = store.new_delivery(env_id, PING, None, {"webhook": hook_id, "actor": ctx.actor}, now)
        with self.core.db.write() as session:
            conn = session.connection()
            self._found(conn, env_id, hook_id)
            store.insert_deliveries(conn, hook_id, [new], env_id=env_id, now=now)
            row = store.delivery(conn, new.delivery_id)  # by id: the dispatcher may add newer ones
        self.wake()
        return delivery_out(row, [])

    def deliveries(self, ctx: RequestContext, hook_id: str, *, limit: int, offset: int) -> list[DeliveryOut]:
        """The webhook's deliveries, newest first, each with its attempts."""
        env_id = self._env(ctx)
        with self.core.db.read() as session:
            conn = session.connection()
            self._found(conn, env_id, hook_id, active_only=False)
            rows = store.deliveries(conn, hook_id, limit=limit, offset=offset)
            attempts = store.attempts_of(conn, [r["id"] for r in rows])
        return [delivery_out(row, attempts[row["id"]]) for row in rows]

    @staticmethod
    def _found(conn: Any, env_id: str, hook_id: str, *, active_only: bool = True) -> dict[str, Any]:
        row = store.get(conn, env_id, hook_id, active_only=active_only)
        if row is None:
            raise NotFound(f"unknown webhook {hook_id!r}", webhook=hook_id)
        return row
