"""The order routes of the client (``/lsm/v1/order``): many changes across entities at once.

An order is applied whole or refused whole (the error lists every refused item by ``index``,
``ref`` and ``rule``). Every order carries an ``Idempotency-Key`` (the caller's, or a fresh one
per call), the same on every automatic retry: a retry after a lost answer gets the first
order, never a second one.
"""

from __future__ import annotations

import uuid
from typing import Any

from lsm.client.routes import IDEMPOTENCY_HEADER, ListT, ObjT, Request, Routes, _seg


class OrderRoutes(Routes[ObjT, ListT]):
    """Place an order; read an order."""

    def order(self, items: list[dict[str, Any]], *, idempotency_key: str | None = None) -> ObjT:
        """Apply ``items`` (``{"action", "entity", "ref"?, "instance"?, "attributes"?, ...}``,
        docs/api.md) in one transaction; the answer is the order (``id``, ``status``, ``items``)."""
        headers = {IDEMPOTENCY_HEADER: idempotency_key or uuid.uuid4().hex}
        return self._one(Request("POST", "/lsm/v1/order", json={"items": items}, headers=headers))

    def get_order(self, order_id: str) -> ObjT:
        """The order: ``status`` (``in_progress``, ``done``, ``failed``) and each item's state."""
        return self._one(Request("GET", f"/lsm/v1/order/{_seg(order_id)}"))
