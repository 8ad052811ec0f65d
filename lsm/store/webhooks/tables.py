"""Webhook tables: who wants the environment's events, and every delivery with its attempts.

Why these shapes (docs/architecture.md, webhooks):

* ``lsm_webhook``: one row per registered receiver. ``cursor`` is the position in the
  environment's event feed (``lsm.facade.events.Cursor``, encoded) up to which feed items have
  been turned into deliveries; the dispatcher moves it in the transaction that inserts the
  deliveries, so no event is queued twice nor skipped. ``secret`` is kept as given (HMAC needs
  it; it is never listed). A removed webhook keeps its row (``active`` false) so that its
  delivery log stays readable.
* ``lsm_webhook_delivery``: one row per (webhook, event): the exact JSON payload, the status
  (``pending``, ``delivered``, ``failed``: given up, ``cancelled``: its webhook was removed),
  the attempts so far and when the next is due. ``event_key`` (``<kind>:<row id>``) is unique
  per webhook. A sender claims a due delivery by pushing ``next_attempt_at`` a lease ahead and
  writing its name in ``lease_owner``: a sender that dies mid-send leaves it due again when
  that lease runs out. The partial index on pending rows keeps "what is due" a short read
  whatever the size of the log; counting failed deliveries (metrics) reads ``status``.
* ``lsm_webhook_attempt``: one row per HTTP attempt (status code or error, duration).

SQLAlchemy Core tables on ``SQLModel.metadata``; timestamps are timezone-aware UTC.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlmodel import SQLModel

from lsm.store.database import JsonType

metadata = SQLModel.metadata

PENDING_SQL = "status = 'pending'"
FAILED_SQL = "status = 'failed'"

lsm_webhook = Table(
    "lsm_webhook",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("env_id", String(36), nullable=False),
    Column("url", Text, nullable=False),
    Column("events", JsonType, nullable=False),
    Column("secret", String(200), nullable=False),
    Column("cursor", String(400), nullable=False),
    Column("created_by", String(200), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("active", Boolean, nullable=False),
    # "the webhooks of an environment" (listing), "every active webhook" (the dispatcher)
    Index("ix_lsm_webhook_env", "env_id", "active"),
)

lsm_webhook_delivery = Table(
    "lsm_webhook_delivery",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("webhook_id", String(36), nullable=False),
    Column("env_id", String(36), nullable=False),
    Column("event_kind", String(50), nullable=False),
    Column("event_key", String(300), nullable=False),
    Column("payload", JsonType, nullable=False),
    Column("status", String(20), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", DateTime(timezone=True), nullable=False),
    Column("lease_owner", String(200), nullable=True),
    Column("last_status_code", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("delivered_at", DateTime(timezone=True), nullable=True),
    UniqueConstraint("webhook_id", "event_key", name="uq_lsm_webhook_delivery_event"),
    # "the deliveries of a webhook, newest first"
    Index("ix_lsm_webhook_delivery_hook", "webhook_id", "created_at", "id"),
    # "pending deliveries that are due" (the sender's claim)
    Index(
        "ix_lsm_webhook_delivery_due",
        "next_attempt_at",
        sqlite_where=text(PENDING_SQL),
        postgresql_where=text(PENDING_SQL),
    ),
    # "deliveries that gave up, per environment" (the metrics' failure gauge; migration 0010)
    Index(
        "ix_lsm_webhook_delivery_failed",
        "env_id",
        sqlite_where=text(FAILED_SQL),
        postgresql_where=text(FAILED_SQL),
    ),
)

lsm_webhook_attempt = Table(
    "lsm_webhook_attempt",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("delivery_id", String(36), nullable=False),
    Column("attempted_at", DateTime(timezone=True), nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Column("duration_ms", Float, nullable=False),
    Column("sender", String(200), nullable=False),
    Index("ix_lsm_webhook_attempt_delivery", "delivery_id", "id"),
)

__all__ = ["lsm_webhook", "lsm_webhook_attempt", "lsm_webhook_delivery"]
