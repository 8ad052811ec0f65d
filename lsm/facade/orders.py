"""Orders: many changes across entities in one transaction, and what became of them.

``order`` checks the items as a whole (``lsm.orchestration.orders.plan_order``), applies them
with ``Orchestrator.execute_many`` (the one decide and commit, all or nothing) and stores the
order in that same transaction, with its ``Idempotency-Key``: a retried order is answered with
the first order, and nothing is applied twice. ``get_order`` reads the order's instances and
says where each item stands: ``done`` in the state it waits for, ``failed`` in a state its
lifecycle labels ``danger`` (or deleted when it waited for another state; with the instance's
diagnosis), ``pending`` otherwise; the order is ``failed`` when an item failed, ``done`` when
every item is, ``in_progress`` until then.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from lsm.errors import Conflict, IdempotencyKeyReused, InvalidInput, LsmError, NotFound
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.inventory import InventoryFacade
from lsm.orchestration import EnvironmentContext
from lsm.orchestration.orders import plan_order, renumber
from lsm.schemas.limits import MAX_IDEMPOTENCY_KEY_LENGTH
from lsm.schemas.orders import ItemOutcome, OrderItemOut, OrderOut, OrderRequest, OrderStatus
from lsm.store.idempotency import IdempotencyKeyRow, claim_key, find_key
from lsm.store.instances import repository as repo
from lsm.store.orders import OrderRow, get_order, insert_order
from lsm.store.tables import InstanceRow

#: an order's Idempotency-Key is stored under this prefix: a create's key never answers an order
KEY_PREFIX = "order:"


class OrdersFacade:
    """Place an order; read an order (see the module docstring)."""

    def __init__(self, core: Core, inventory: InventoryFacade) -> None:
        self.core = core
        self.inventory = inventory

    def order(
        self, ctx: RequestContext, request: OrderRequest, *, idempotency_key: str | None = None
    ) -> OrderOut:
        """Apply every item of ``request`` in one transaction, or none (one error naming every
        refused item by ``index``, ``ref`` and ``rule``); the order as it stands after."""
        env = self.core.environments.context(ctx.environment)
        body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        fingerprint = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        key = None
        if idempotency_key is not None:
            longest = MAX_IDEMPOTENCY_KEY_LENGTH - len(KEY_PREFIX)
            if not 0 < len(idempotency_key) <= longest:
                raise InvalidInput(
                    f"an order's Idempotency-Key has 1..{longest} characters",
                    field="Idempotency-Key",
                )
            key = KEY_PREFIX + idempotency_key
            first = self._first(ctx, env, key, fingerprint)
            if first is not None:
                return first
        with self.core.db.read() as session:
            plan = plan_order(session, env, request.items, limit=env.settings.max_order_items)
        order_id = str(uuid.uuid4())

        def record(session: Session) -> None:  # in the order's own transaction
            insert_order(
                session,
                OrderRow(
                    id=order_id,
                    env_id=env.env_id,
                    actor=ctx.origin.actor,
                    request_id=ctx.origin.request_id,
                    items=[item.stored() for item in plan.items],
                ),
            )
            if key is not None:
                row = IdempotencyKeyRow(
                    env_id=env.env_id, key=key, fingerprint=fingerprint, instance_id=order_id, body={}
                )
                claim_key(session, row)

        try:
            self.core.orchestrator.execute_many(env, plan.commands, origin=ctx.origin, then=record)
        except (Conflict, IntegrityError) as exc:
            # a concurrent first use of the same key committed first: its order is this one's
            first = self._first(ctx, env, key, fingerprint) if key is not None else None
            if first is not None:
                return first
            if isinstance(exc, LsmError):
                raise renumber(exc, plan, request.items) from None
            # as a create does: a unique row taken by a concurrent request is a 409, never a 500
            raise Conflict("a concurrent request took an instance id or identity of this order") from None
        except LsmError as exc:
            raise renumber(exc, plan, request.items) from None
        return self.get_order(ctx, order_id)

    def _first(
        self, ctx: RequestContext, env: EnvironmentContext, key: str, fingerprint: str
    ) -> OrderOut | None:
        with self.core.db.read() as session:
            first = find_key(session, env.env_id, key)
        if first is None:
            return None
        if first.fingerprint != fingerprint:
            raise IdempotencyKeyReused(
                f"the Idempotency-Key {key.removeprefix(KEY_PREFIX)!r} was used for another order; "
                "use a new key for a new order",
                field="Idempotency-Key",
                key=key.removeprefix(KEY_PREFIX),
                order=first.instance_id,
            )
        return self.get_order(ctx, first.instance_id)

    def get_order(self, ctx: RequestContext, order_id: str) -> OrderOut:
        """The order and where each of its items stands now (module docstring)."""
        env = self.core.environments.context(ctx.environment)
        with self.core.db.read() as session:
            row = get_order(session, env.env_id, order_id)
            if row is None:
                raise NotFound(f"no order {order_id!r}", order=order_id)
            instances = repo.get_instances(session, env.env_id, [i["instance_id"] for i in row.items])
        items = [self._item(ctx, env, stored, instances.get(stored["instance_id"])) for stored in row.items]
        failed = [i.index for i in items if i.outcome == "failed"]
        status: OrderStatus = (
            "failed" if failed else "done" if all(i.outcome == "done" for i in items) else "in_progress"
        )
        return OrderOut(id=row.id, status=status, created_at=row.created_at, items=items, failed=failed)

    def _item(
        self, ctx: RequestContext, env: EnvironmentContext, stored: dict[str, object], row: InstanceRow | None
    ) -> OrderItemOut:
        wait_for = str(stored["wait_for"])
        outcome: ItemOutcome = "pending"
        diagnosis = None
        if row is None:
            outcome, diagnosis = "failed", "the instance is gone"
        elif row.state == wait_for:
            outcome = "done"
        else:
            state = env.lifecycle(env.binding(row.entity)).state(row.state)
            if state.label == "danger" or row.deleted:
                outcome = "failed"
                diagnosis = self.inventory.diagnose(ctx, row.entity, row.id).summary
        return OrderItemOut(
            index=int(str(stored["index"])),
            action=stored["action"],
            entity=str(stored["entity"]),
            ref=None if stored.get("ref") is None else str(stored["ref"]),
            instance_id=str(stored["instance_id"]),
            wait_for=wait_for,
            state=None if row is None else row.state,
            version=None if row is None else row.version,
            outcome=outcome,
            diagnosis=diagnosis,
        )
