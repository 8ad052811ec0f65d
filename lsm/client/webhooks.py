"""The webhook routes of the client, and what a receiver needs: ``verify_signature``.

A receiver checks each delivery before trusting it::

    from lsm.client import verify_signature

    def handle(body: bytes, headers: Mapping[str, str]) -> int:
        if not verify_signature(SECRET, body, headers.get("X-LSM-Signature")):
            return 401
        if seen(headers["X-LSM-Delivery"]):   # deliveries are at least once: retries repeat it
            return 200
        ...
        return 200                            # any 2xx; anything else is retried with back-off
"""

from __future__ import annotations

import hmac

from lsm.client.routes import ListT, ObjT, Request, Routes, _seg
from lsm.schemas.webhooks import signature


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` (``X-LSM-Signature``) is the signature of ``body`` (the raw request
    bytes, before any JSON parsing) with ``secret``; compared in constant time."""
    if not header:
        return False
    return hmac.compare_digest(signature(secret, body), header.strip())


class WebhookRoutes(Routes[ObjT, ListT]):
    """``/api/v1/webhooks``: register (admin), list, show, remove (admin), ping (admin), deliveries."""

    def create_webhook(self, url: str, *, events: list[str] | None = None, secret: str | None = None) -> ObjT:
        """Register a receiver; the answer's ``secret`` is shown this once."""
        body: dict[str, object] = {"url": url}
        if events is not None:
            body["events"] = events
        if secret is not None:
            body["secret"] = secret
        return self._one(Request("POST", "/api/v1/webhooks", json=body))

    def webhooks(self) -> ListT:
        """The environment's webhooks (never a secret)."""
        return self._many(Request("GET", "/api/v1/webhooks"))

    def webhook(self, webhook_id: str) -> ObjT:
        return self._one(Request("GET", f"/api/v1/webhooks/{_seg(webhook_id)}"))

    def delete_webhook(self, webhook_id: str) -> ObjT:
        """Remove a webhook; its pending deliveries are cancelled, its log stays."""
        return self._one(Request("DELETE", f"/api/v1/webhooks/{_seg(webhook_id)}"))

    def ping_webhook(self, webhook_id: str) -> ObjT:
        """Queue a signed ``ping`` delivery; the answer is the delivery."""
        return self._one(Request("POST", f"/api/v1/webhooks/{_seg(webhook_id)}/test"))

    def webhook_deliveries(self, webhook_id: str, *, limit: int = 50, offset: int = 0) -> ListT:
        """The webhook's deliveries, newest first, with their attempts."""
        params = {"limit": limit, "offset": offset}
        return self._many(Request("GET", f"/api/v1/webhooks/{_seg(webhook_id)}/deliveries", params=params))
