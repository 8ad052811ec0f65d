"""Webhook rows: registering, queueing deliveries with the feed cursor, claiming, recording.

Why these operations (``lsm.store.webhooks.tables`` has the table shapes):

* ``enqueue`` moves a webhook's feed cursor from the position it read at to the new one, and
  inserts that stretch's deliveries, in the caller's one transaction; the cursor update is
  conditional on the old position, so two dispatchers (two processes on PostgreSQL) reading
  the same stretch insert it once: the loser's update matches no row and it rolls back.
* ``claim`` takes one due pending delivery by pushing its ``next_attempt_at`` a lease ahead,
  conditional on the value it read: two senders never hold the same delivery, a sender that
  died leaves it due again once the lease ran out. PostgreSQL skips rows another claim holds
  (``FOR UPDATE SKIP LOCKED``) instead of waiting on them.
* ``record`` writes an attempt's outcome only while the sender still holds the lease (its name
  in ``lease_owner``): a taken-over sender's late answer does not overwrite the new holder's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, insert, select, update

from lsm.store.batches import chunks, utc
from lsm.store.tables import new_id
from lsm.store.webhooks.tables import lsm_webhook, lsm_webhook_attempt, lsm_webhook_delivery

hook_t = lsm_webhook
delivery_t = lsm_webhook_delivery
attempt_t = lsm_webhook_attempt


# -- webhooks -------------------------------------------------------------------------------------
def create(
    conn: Connection,
    *,
    env_id: str,
    url: str,
    events: list[str],
    secret: str,
    cursor: str,
    created_by: str | None,
    now: datetime,
) -> dict[str, Any]:
    """A new active webhook starting at ``cursor`` (the feed's present: no backlog)."""
    row = {
        "id": new_id(),
        "env_id": env_id,
        "url": url,
        "events": list(events),
        "secret": secret,
        "cursor": cursor,
        "created_by": created_by,
        "created_at": now,
        "active": True,
    }
    conn.execute(insert(hook_t), [row])
    return row


def list_active(conn: Connection, env_id: str) -> list[dict[str, Any]]:
    query = (
        select(hook_t)
        .where(hook_t.c.env_id == env_id, hook_t.c.active.is_(True))
        .order_by(hook_t.c.created_at, hook_t.c.id)
    )
    return [dict(r) for r in conn.execute(query).mappings()]


def get(conn: Connection, env_id: str, hook_id: str, *, active_only: bool = True) -> dict[str, Any] | None:
    """The webhook ``hook_id`` of the environment (only an active one unless told), or ``None``."""
    query = select(hook_t).where(hook_t.c.id == hook_id, hook_t.c.env_id == env_id)
    if active_only:
        query = query.where(hook_t.c.active.is_(True))
    found = conn.execute(query).mappings().first()
    return dict(found) if found is not None else None


def deactivate(conn: Connection, env_id: str, hook_id: str, now: datetime) -> bool:
    """Remove a webhook: no new deliveries; its pending ones are ``cancelled``. Whether it was active."""
    done = conn.execute(
        update(hook_t)
        .where(hook_t.c.id == hook_id, hook_t.c.env_id == env_id, hook_t.c.active.is_(True))
        .values(active=False)
    )
    if not done.rowcount:
        return False
    conn.execute(
        update(delivery_t)
        .where(delivery_t.c.webhook_id == hook_id, delivery_t.c.status == "pending")
        .values(status="cancelled", lease_owner=None, last_error="the webhook was removed")
    )
    return True


def every_active(conn: Connection) -> list[dict[str, Any]]:
    """Every active webhook (id, env, events, cursor): what the dispatcher looks at each round."""
    query = select(hook_t.c.id, hook_t.c.env_id, hook_t.c.events, hook_t.c.cursor).where(
        hook_t.c.active.is_(True)
    )
    return [dict(r) for r in conn.execute(query.order_by(hook_t.c.env_id, hook_t.c.id)).mappings()]


# -- queueing -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewDelivery:
    """One feed item for one webhook, about to be queued."""

    kind: str
    key: str
    payload: dict[str, Any]
    delivery_id: str


def new_delivery(env_id: str, kind: str, key: str | None, data: dict[str, Any], now: datetime) -> NewDelivery:
    """A delivery of one event (``key`` names the event for good; ``None``: the delivery alone,
    as for a ping), its signed body built once: feed items and pings share the envelope."""
    delivery_id = new_id()
    key = key if key is not None else f"{kind}:{delivery_id}"
    payload = {
        "delivery": delivery_id,
        "environment": env_id,
        "event": kind,
        "data": data,
        "created_at": now.isoformat(),
    }
    return NewDelivery(kind=kind, key=key, payload=payload, delivery_id=delivery_id)


def enqueue(
    conn: Connection,
    hook_id: str,
    *,
    old_cursor: str,
    new_cursor: str,
    deliveries: Sequence[NewDelivery],
    env_id: str,
    now: datetime,
) -> bool:
    """Queue ``deliveries`` and move the cursor, if the cursor still is ``old_cursor``.

    ``False``: another dispatcher moved it (or the webhook was removed); the caller rolls back.
    """
    moved = conn.execute(
        update(hook_t)
        .where(hook_t.c.id == hook_id, hook_t.c.cursor == old_cursor, hook_t.c.active.is_(True))
        .values(cursor=new_cursor)
    )
    if not moved.rowcount:
        return False
    insert_deliveries(conn, hook_id, deliveries, env_id=env_id, now=now)
    return True


def insert_deliveries(
    conn: Connection, hook_id: str, deliveries: Sequence[NewDelivery], *, env_id: str, now: datetime
) -> None:
    """Queue ``deliveries`` for ``hook_id``, due now."""
    if deliveries:
        conn.execute(
            insert(delivery_t),
            [
                {
                    "id": d.delivery_id,
                    "webhook_id": hook_id,
                    "env_id": env_id,
                    "event_kind": d.kind,
                    "event_key": d.key,
                    "payload": d.payload,
                    "status": "pending",
                    "attempts": 0,
                    "next_attempt_at": now,
                    "lease_owner": None,
                    "last_status_code": None,
                    "last_error": None,
                    "created_at": now,
                    "delivered_at": None,
                }
                for d in deliveries
            ],
        )


# -- sending -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claimed:
    """A delivery a sender holds: where to send it, with which secret, and what it had before."""

    delivery_id: str
    env_id: str
    event_kind: str
    payload: dict[str, Any]
    attempts: int
    created_at: datetime
    url: str
    secret: str


def claim(conn: Connection, owner: str, *, now: datetime, lease: float, skip_locked: bool) -> Claimed | None:
    """Take the most overdue pending delivery of an active webhook (see the module docstring)."""
    d, h = delivery_t, hook_t
    query = (
        select(
            d.c.id,
            d.c.env_id,
            d.c.event_kind,
            d.c.payload,
            d.c.attempts,
            d.c.created_at,
            d.c.next_attempt_at,
            h.c.url,
            h.c.secret,
        )
        .join(h, h.c.id == d.c.webhook_id)
        .where(d.c.status == "pending", d.c.next_attempt_at <= now, h.c.active.is_(True))
        .order_by(d.c.next_attempt_at)
        .limit(1)
    )
    if skip_locked:
        query = query.with_for_update(skip_locked=True, of=d)
    row = conn.execute(query).mappings().first()
    if row is None:
        return None
    taken = conn.execute(
        update(d)
        .where(d.c.id == row["id"], d.c.status == "pending", d.c.next_attempt_at == row["next_attempt_at"])
        .values(next_attempt_at=now + timedelta(seconds=lease), lease_owner=owner)
    )
    if not taken.rowcount:
        return None  # another sender of this process took it between the read and the update
    created = utc(row["created_at"])
    assert created is not None
    return Claimed(
        delivery_id=row["id"],
        env_id=row["env_id"],
        event_kind=row["event_kind"],
        payload=row["payload"],
        attempts=row["attempts"],
        created_at=created,
        url=row["url"],
        secret=row["secret"],
    )


def extend(conn: Connection, delivery_ids: Sequence[str], owner: str, *, now: datetime, lease: float) -> None:
    """Renew the leases of deliveries ``owner`` is still sending."""
    if delivery_ids:
        conn.execute(
            update(delivery_t)
            .where(
                delivery_t.c.id.in_(list(delivery_ids)),
                delivery_t.c.lease_owner == owner,
                delivery_t.c.status == "pending",
            )
            .values(next_attempt_at=now + timedelta(seconds=lease))
        )


def give_back(conn: Connection, delivery_ids: Sequence[str], owner: str, *, now: datetime) -> None:
    """Shutdown: deliveries ``owner`` holds are due again now, for another sender."""
    if delivery_ids:
        conn.execute(
            update(delivery_t)
            .where(delivery_t.c.id.in_(list(delivery_ids)), delivery_t.c.lease_owner == owner)
            .values(next_attempt_at=now, lease_owner=None)
        )


@dataclass(frozen=True)
class Outcome:
    """What one attempt came to, and what the delivery becomes."""

    status: str  # pending (retry at next_attempt_at), delivered, failed
    status_code: int | None
    error: str | None
    duration_ms: float
    next_attempt_at: datetime


def record(conn: Connection, delivery_id: str, owner: str, outcome: Outcome, *, now: datetime) -> bool:
    """Write an attempt and the delivery's new state, if ``owner`` still holds it."""
    done = conn.execute(
        update(delivery_t)
        .where(
            delivery_t.c.id == delivery_id,
            delivery_t.c.lease_owner == owner,
            delivery_t.c.status == "pending",
        )
        .values(
            status=outcome.status,
            attempts=delivery_t.c.attempts + 1,
            next_attempt_at=outcome.next_attempt_at,
            lease_owner=None,
            last_status_code=outcome.status_code,
            last_error=outcome.error,
            delivered_at=now if outcome.status == "delivered" else None,
        )
    )
    if not done.rowcount:
        return False
    conn.execute(
        insert(attempt_t),
        [
            {
                "delivery_id": delivery_id,
                "attempted_at": now,
                "status_code": outcome.status_code,
                "error": outcome.error,
                "duration_ms": outcome.duration_ms,
                "sender": owner,
            }
        ],
    )
    return True


# -- the delivery log ----------------------------------------------------------------------------------
def deliveries(conn: Connection, hook_id: str, *, limit: int, offset: int) -> list[dict[str, Any]]:
    """A webhook's deliveries, newest first (``ix_lsm_webhook_delivery_hook`` read backwards)."""
    query = (
        select(delivery_t)
        .where(delivery_t.c.webhook_id == hook_id)
        .order_by(delivery_t.c.created_at.desc(), delivery_t.c.id.desc())
        .limit(limit)
        .offset(offset)
    )
    return [dict(r) for r in conn.execute(query).mappings()]


def delivery(conn: Connection, delivery_id: str) -> dict[str, Any]:
    """One delivery by id (it must exist: the caller just queued it)."""
    row = conn.execute(select(delivery_t).where(delivery_t.c.id == delivery_id)).mappings().one()
    return dict(row)


def attempts_of(conn: Connection, delivery_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The attempts of each delivery, oldest first."""
    found: dict[str, list[dict[str, Any]]] = {i: [] for i in delivery_ids}
    for part in chunks(list(delivery_ids)):
        query = (
            select(attempt_t)
            .where(attempt_t.c.delivery_id.in_(list(part)))
            .order_by(attempt_t.c.delivery_id, attempt_t.c.id)
        )
        for row in conn.execute(query).mappings():
            found[row["delivery_id"]].append(dict(row))
    return found


def first_pending(conn: Connection, *, now: datetime) -> tuple[str, bool] | None:
    """The pending delivery due first and whether it is due at ``now``, read without a lock
    (whether a claim is worth a write); ``None`` when no delivery is pending at all."""
    query = (
        select(delivery_t.c.id, delivery_t.c.next_attempt_at <= now)
        .where(delivery_t.c.status == "pending")
        .order_by(delivery_t.c.next_attempt_at)
        .limit(1)
    )
    found = conn.execute(query).first()
    return None if found is None else (str(found[0]), bool(found[1]))
