"""Orders: many changes across entities, all or nothing (``POST /lsm/v1/order``).

An order is ``{"items": [...]}``. Each item is one change: ``create`` (``entity``,
``attributes``), ``update`` (``instance``, ``attributes``), ``delete`` (``instance``) or
``set_state`` (``instance``, ``target_state``); ``current_version`` is checked when given (409
when it moved) and read at the order's check otherwise. ``ref`` names an item locally: in any
attribute value or in ``instance``, ``{"$ref": "<ref>"}`` stands for the instance that item
creates or changes (a port's ``router`` is the router created two lines up). ``wait_for`` is
the state the item waits for (default ``up``; ``terminated`` for a delete; the target of a
``set_state``).

The answer and ``GET /lsm/v1/order/{id}``: the order's ``status`` (``in_progress``, ``done``,
``failed``) and its items in the order given, each with its instance, state and ``outcome``
(``pending``, ``done``, ``failed`` with the instance's ``diagnosis``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lsm.schemas.limits import MAX_INT, MAX_NAME_LENGTH, MAX_REF_LENGTH

#: the most items any order may hold (the environment's ``max_order_items`` is at most this)
MAX_ORDER_ITEMS = 10_000

Action = Literal["create", "update", "delete", "set_state"]
OrderStatus = Literal["in_progress", "done", "failed"]
ItemOutcome = Literal["pending", "done", "failed"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class LocalRef(_Body):
    """``{"$ref": "<ref>"}``: the instance of the order's item named ``<ref>``."""

    ref: str = Field(alias="$ref", max_length=MAX_NAME_LENGTH)


class OrderItem(_Body):
    action: Action = Field(description="create, update, delete or set_state.")
    entity: str = Field(max_length=MAX_NAME_LENGTH, description="The service entity.")
    ref: str | None = Field(
        None, max_length=MAX_NAME_LENGTH, description='A local name other items use as {"$ref": name}.'
    )
    instance: Annotated[str, Field(min_length=1, max_length=MAX_REF_LENGTH)] | LocalRef | None = Field(
        None,
        description='update/delete/set_state: an instance id, <identity_attr>=<value>, or {"$ref": name}.',
    )
    instance_id: str | None = Field(
        None, max_length=36, description="create: a chosen instance id (a UUID); generated if absent."
    )
    attributes: dict[str, Any] | None = Field(None, description="create: the attributes; update: merged in.")
    current_version: int | None = Field(
        None, ge=0, le=MAX_INT, description="The version the change is based on (checked when given)."
    )
    target_state: str | None = Field(None, max_length=MAX_NAME_LENGTH, description="set_state: the state.")
    message: str = Field("", max_length=2000, description="set_state: a message for the event log.")
    wait_for: str | None = Field(
        None,
        max_length=MAX_NAME_LENGTH,
        description="The state the item waits for (see the module docstring).",
    )


class OrderRequest(_Body):
    items: list[OrderItem] = Field(min_length=1, max_length=MAX_ORDER_ITEMS)


class OrderItemOut(BaseModel):
    index: int
    action: Action
    entity: str
    ref: str | None = None
    instance_id: str
    wait_for: str
    state: str | None = Field(None, description="The instance's state now.")
    version: int | None = None
    outcome: ItemOutcome
    diagnosis: str | None = Field(None, description="Why a failed item failed (the instance's diagnosis).")


class OrderOut(BaseModel):
    id: str
    status: OrderStatus
    created_at: datetime
    items: list[OrderItemOut]
    failed: list[int] = Field(default_factory=list, description="The indexes of the failed items.")
