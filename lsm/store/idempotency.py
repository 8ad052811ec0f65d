"""Idempotency keys of creates: the first answer to a request, kept for a day.

Why: a client whose create timed out or lost its connection can not know whether the instance
was made. Retrying with the same ``Idempotency-Key`` (or the same chosen instance id) must
return the first answer, not a duplicate instance and not a 409. A key is scoped to one
environment; its row holds a fingerprint of the request (so that the same key with another
body is refused, not answered with someone else's result), the instance it created, and the
answer's body. Rows older than ``KEY_TTL`` are ignored and deleted as new keys are written.

Exactly once: ``claim_key`` inserts the row in the create's own transaction, so the instance
and its key commit together or not at all, and the key's primary key decides between
concurrent first uses (on PostgreSQL the second insert waits for the first transaction and
then fails; SQLite has one writer): one creates, the others find the committed row and are
answered by it (same request) or refused (another request). No check-then-insert.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Column, Index, delete, update
from sqlmodel import Field, Session, SQLModel, col

from lsm.schemas.limits import MAX_IDEMPOTENCY_KEY_LENGTH
from lsm.store.batches import aware
from lsm.store.database import Database, JsonType
from lsm.store.tables import utcnow

#: how long a key is remembered
KEY_TTL = timedelta(days=1)


class IdempotencyKeyRow(SQLModel, table=True):
    """The first answer to a create made with ``key`` in environment ``env_id``."""

    __tablename__ = "lsm_idempotency_key"
    __table_args__ = (
        # expiry: delete the rows older than a day without scanning the live ones
        Index("ix_lsm_idempotency_key_created", "created_at"),
    )
    env_id: str = Field(primary_key=True, max_length=36)
    key: str = Field(primary_key=True, max_length=MAX_IDEMPOTENCY_KEY_LENGTH)
    #: sha256 of the request (entity, attributes, chosen id, initial state)
    fingerprint: str = Field(max_length=64)
    instance_id: str = Field(max_length=36)
    status: int = 200
    body: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JsonType, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


def find_key(
    session: Session, env_id: str, key: str, *, now: datetime | None = None
) -> IdempotencyKeyRow | None:
    """The live (not expired) row of ``key`` in ``env_id``."""
    oldest = (now or utcnow()) - KEY_TTL
    row = session.get(IdempotencyKeyRow, (env_id, key))
    if row is None or aware(row.created_at) < oldest:
        return None
    return row


def claim_key(session: Session, row: IdempotencyKeyRow) -> None:
    """Insert ``row`` in ``session`` (the create's transaction), after deleting expired rows;
    raises ``IntegrityError`` when a live row of its key exists or is being written."""
    expired = col(IdempotencyKeyRow.created_at) < utcnow() - KEY_TTL
    session.execute(delete(IdempotencyKeyRow).where(expired))
    session.add(row)
    session.flush()


def record_answer(db: Database, env_id: str, key: str, instance_id: str, body: dict[str, Any]) -> None:
    """Replace the stored answer of ``key`` (still naming ``instance_id``) with ``body``: the
    create's answer when auto transfers after its transaction moved the instance on."""
    with db.write() as session:
        session.execute(
            update(IdempotencyKeyRow)
            .where(
                col(IdempotencyKeyRow.env_id) == env_id,
                col(IdempotencyKeyRow.key) == key,
                col(IdempotencyKeyRow.instance_id) == instance_id,
            )
            .values(body=body)
        )
