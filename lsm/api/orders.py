"""``/lsm/v1/order``: many changes across entities in one transaction, and what became of them.

Thin by design: parse, call ``OrdersFacade`` (in the write lane: the whole order waits for one
commit), return its view. The rules of an order live in ``lsm.orchestration.orders``.
"""

from __future__ import annotations

from fastapi import APIRouter

from lsm.api.access import require
from lsm.api.deps import ContextDep, FacadesDep
from lsm.api.params import Id, IdempotencyKey
from lsm.api.responses import CHANGE, READ, errors
from lsm.api.write_lane import run_change
from lsm.schemas.auth import Role
from lsm.schemas.orders import OrderOut, OrderRequest

router = APIRouter(
    prefix="/lsm/v1/order",
    tags=["orders"],
    dependencies=[require(Role.VIEWER, write=Role.OPERATOR)],
    responses=errors(*READ),
)


@router.post("", responses=errors(*CHANGE))
async def place_order(
    body: OrderRequest, facades: FacadesDep, ctx: ContextDep, idempotency_key: IdempotencyKey = None
) -> OrderOut:
    """Create, update, delete and set the state of instances of any entities, all in one
    transaction or none (every refused item named by ``index``, ``ref`` and ``rule``). An
    ``Idempotency-Key`` makes a retry answer the first order."""
    return await run_change(facades.orders.order, ctx, body, idempotency_key=idempotency_key)


@router.get("/{order_id}")
def get_order(order_id: Id, facades: FacadesDep, ctx: ContextDep) -> OrderOut:
    """The order: ``status`` (``in_progress``, ``done``, ``failed``) and every item's instance,
    state and outcome, in the order given."""
    return facades.orders.get_order(ctx, order_id)
