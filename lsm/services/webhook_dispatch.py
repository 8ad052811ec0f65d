"""The webhook dispatcher: turns the environment's event feed into durable deliveries.

Why tail the feed rather than hook the write paths: the feed (``lsm.facade.events``) reads the
tables every process writes (the event log, the compile queue, the action log), so every
committed event is on it whoever made it, and the API write path stays exactly as it is.

Each webhook row keeps its own feed cursor. A round reads, per webhook, the feed after that
cursor and, in ONE transaction, inserts a delivery for every item the webhook asked for and
moves the cursor past the items read (``lsm.store.webhooks.statements.enqueue``, conditional on the
old cursor). A crash before the commit leaves cursor and deliveries as they were, so the next
round queues the same stretch; a crash after it leaves them queued, and the sender sends them.
So every committed event becomes exactly one delivery row per matching webhook.

On PostgreSQL a row id is taken before its transaction commits, so a later id can be visible
while an earlier one is not yet: each webhook's reads keep a ``Holdback`` (the same as the
event stream's, ``lsm.facade.holdback``) that stops before a position a committing transaction
could still fill, and gives it up after ``policy.settle`` seconds. Before, every item younger
than ``settle`` waited for the next round, whether anything could precede it or not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from lsm.facade.events import Cursor, EventsFacade, FeedItem
from lsm.facade.holdback import Holdback
from lsm.schemas.events import COMPILE_FINISHED, DEPLOY_OUTCOME, INSTANCE_STATE
from lsm.schemas.webhooks import DeliveryPolicy, matches
from lsm.store.database import Database
from lsm.store.tables import utcnow
from lsm.store.transient import log_failure
from lsm.store.webhooks import statements as store

log = logging.getLogger(__name__)

#: feed items one webhook reads per round (a full read asks for another round at once)
BATCH = 200


class _Round:
    """One look at the feed for every active webhook (the dispatcher's unit of work)."""

    label = "webhook dispatch"

    def __init__(self, dispatcher: WebhookDispatcher) -> None:
        self.dispatcher = dispatcher

    def run(self) -> None:
        try:
            self.dispatcher.dispatch()
        except Exception as exc:  # the next round reads the same stretch again: nothing is lost
            log_failure(log, exc, "webhook dispatch failed; retrying at the next round")
        finally:
            self.dispatcher.done()

    def deadline(self) -> float | None:
        return None

    def expire(self) -> None:
        return None


class WebhookDispatcher:
    """A ``WorkSource`` of the service loop: a round every ``policy.poll_interval`` seconds."""

    name = "webhook-dispatcher"

    def __init__(
        self,
        db: Database,
        events: EventsFacade,
        policy: DeliveryPolicy,
        *,
        queued: Callable[[], None] = lambda: None,
    ) -> None:
        self.db = db
        self.events = events
        self.policy = policy
        #: told after a round queued deliveries (the sender of this process looks at once)
        self.queued = queued
        #: per webhook: what its reads wait for on PostgreSQL, and since when
        self._holdbacks: dict[str, Holdback] = {}
        self._lock = threading.Lock()
        self._busy = False
        self._next_round = 0.0

    def claim(self) -> _Round | None:
        with self._lock:
            if self._busy or time.monotonic() < self._next_round:
                return None
            self._busy = True
            self._next_round = time.monotonic() + self.policy.poll_interval
        return _Round(self)

    def done(self) -> None:
        with self._lock:
            self._busy = False

    def wake(self) -> None:
        """Look at the feed at the next claim, not at the next poll."""
        with self._lock:
            self._next_round = 0.0

    def heartbeat(self, running: Any) -> None:
        return None  # a round holds no lease: the cursor update decides who wins

    def release(self, running: Any) -> None:
        return None

    def dispatch(self) -> int:
        """One round over every active webhook; the number of deliveries queued."""
        with self.db.read() as session:
            hooks = store.every_active(session.connection())
        # a removed or paused webhook's hold-back goes with it (a paused one starts afresh)
        active = {hook["id"] for hook in hooks}
        self._holdbacks = {h: held for h, held in self._holdbacks.items() if h in active}
        queued = 0
        for hook in hooks:
            try:
                queued += self.dispatch_one(hook)
            except Exception as exc:  # one webhook's trouble never holds up the others
                log_failure(log, exc, "webhook %s: dispatch failed", hook["id"])
        if queued:
            self.queued()
        return queued

    def dispatch_one(self, hook: dict[str, Any]) -> int:
        """Queue the feed items after ``hook``'s cursor; the number of deliveries queued."""
        cursor = Cursor.decode(hook["env_id"], hook["cursor"])
        holdback = self._holdbacks.setdefault(hook["id"], Holdback(settle=self.policy.settle))
        taken = self.events.read(cursor, limit=BATCH, holdback=holdback)
        if not taken:
            return 0
        if len(taken) >= BATCH:
            self.wake()  # a full batch, all settled: more is waiting
        now = utcnow()
        wanted = [item for item in taken if matches(hook["events"], item.kind, _status(item))]
        deliveries = [_delivery(hook["env_id"], item, now) for item in wanted]
        with self.db.write() as session:
            moved = store.enqueue(
                session.connection(),
                hook["id"],
                old_cursor=hook["cursor"],
                new_cursor=taken[-1].cursor.encode(),
                deliveries=deliveries,
                env_id=hook["env_id"],
                now=now,
            )
        return len(deliveries) if moved else 0


def _status(item: FeedItem) -> str | None:
    return str(getattr(item.data, "status", "")) or None


def event_key(item: FeedItem) -> str:
    """What names the event for good: its kind and its row's id."""
    c = item.cursor
    if item.kind == INSTANCE_STATE:
        return f"{INSTANCE_STATE}:{c.event_id}"
    if item.kind == COMPILE_FINISHED:
        return f"{COMPILE_FINISHED}:{c.compile_id}"
    assert item.kind == DEPLOY_OUTCOME
    return f"{DEPLOY_OUTCOME}:{c.action_id}"


def _delivery(env_id: str, item: FeedItem, now: datetime) -> store.NewDelivery:
    return store.new_delivery(env_id, item.kind, event_key(item), item.data.model_dump(mode="json"), now)
