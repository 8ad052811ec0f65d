"""Orders: a group of changes across entities, applied in one transaction, kept as a resource.

Why a table of its own: a northbound system (an order portal, a CI job) asks about the order
it placed, not about each instance (``GET /lsm/v1/order/{id}``). The row keeps what the order
was (its items, in the order given, each with the instance it made or changed and the state it
waits for); what the order *is* now (in progress, done, failed) is read from those instances
when asked, so nothing here must be kept in step with the lifecycle. The row is inserted in
the transaction that applies the order (``lsm.orchestration.orders``): an order exists if and
only if its changes were made.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, Index
from sqlmodel import Field, Session, SQLModel

from lsm.store.database import JsonType
from lsm.store.tables import utcnow


class OrderRow(SQLModel, table=True):
    """One applied order; ``items``: ``[{index, action, entity, ref, instance_id, target}]``."""

    __tablename__ = "lsm_order"
    __table_args__ = (Index("ix_lsm_order_env_created", "env_id", "created_at"),)
    id: str = Field(primary_key=True, max_length=36)
    env_id: str = Field(max_length=36)
    actor: str = Field(default="", max_length=200)
    request_id: str | None = Field(default=None, max_length=64)
    items: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JsonType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


def insert_order(session: Session, row: OrderRow) -> None:
    """Insert ``row`` in ``session`` (the transaction that applies the order)."""
    session.add(row)
    session.flush()


def get_order(session: Session, env_id: str, order_id: str) -> OrderRow | None:
    """The order ``order_id`` of ``env_id``, or ``None``."""
    row = session.get(OrderRow, order_id)
    if row is None or row.env_id != env_id:
        return None
    return row
