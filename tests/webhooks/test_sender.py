"""The sender's leases and concurrency, and the dispatcher's conditional cursor, on a real
database (every backend) with a real receiver. Time is moved by the senders' clocks, not slept."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.webhooks import CreateWebhook
from lsm.services.webhook_dispatch import WebhookDispatcher
from lsm.services.webhook_send import WebhookSender
from lsm.store.database import Database
from lsm.store.webhooks import statements as store
from tests.webhooks.conftest import FILE_MODEL, fast_config, fast_policy, queue_pings
from tests.webhooks.receiver import Receiver

LOCAL = RequestContext.local()


def queue(db: Database, receiver: Receiver, count: int) -> str:
    return queue_pings(db, receiver.url, count)[0]


def test_a_taken_over_delivery_is_recorded_by_its_new_sender_only(db: Database, receiver: Receiver) -> None:
    queue(db, receiver, 1)
    policy = fast_policy(lease=30.0)
    first = WebhookSender(db, policy, "first")
    later = WebhookSender(db, policy, "later", clock=lambda: datetime.now(UTC) + timedelta(seconds=31))
    try:
        held = first.claim()
        assert held is not None
        assert WebhookSender(db, policy, "third").claim() is None  # held: not due for anyone else
        taken = later.claim()  # the first sender's lease ran out
        assert taken is not None and taken.claimed.delivery_id == held.claimed.delivery_id

        taken.run()
        held.run()  # too late: fenced out
    finally:
        first.close()
        later.close()

    with db.read() as session:
        conn = session.connection()
        (row,) = store.deliveries(conn, store.every_active(conn)[0]["id"], limit=10, offset=0)
        attempts = store.attempts_of(conn, [row["id"]])[row["id"]]
    assert (row["status"], row["attempts"]) == ("delivered", 1)
    assert [a["sender"] for a in attempts] == ["later"]
    assert len(receiver.requests) == 2  # both sent: at least once, the receiver de-duplicates


def test_a_sender_runs_at_most_its_concurrency(db: Database, receiver: Receiver) -> None:
    queue(db, receiver, 3)
    sender = WebhookSender(db, fast_policy(concurrency=2), "one")
    try:
        a, b = sender.claim(), sender.claim()
        assert a is not None and b is not None
        assert sender.claim() is None  # two are running
        a.run()
        c = sender.claim()
        assert c is not None
        b.run()
        c.run()
        assert sender.claim() is None  # nothing left
    finally:
        sender.close()
    assert len(receiver.accepted) == 3


def test_two_dispatchers_queue_a_stretch_of_the_feed_once(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, receiver: Receiver
) -> None:
    engine = engine_factory(FILE_MODEL, config=fast_config(tmp_path))
    hook = engine.facades.webhooks.create(LOCAL, CreateWebhook(url=receiver.url, events=["instance_state"]))
    for name in ("a", "b"):
        engine.facades.inventory.create_instance(LOCAL, "router", {"name": name})
    policy = fast_policy(settle=0.0)
    one = WebhookDispatcher(engine.db, engine.facades.events, policy)
    other = WebhookDispatcher(engine.db, engine.facades.events, policy)
    with engine.db.read() as session:
        (seen,) = store.every_active(session.connection())  # both read the same cursor

    assert one.dispatch_one(seen) == 2
    assert other.dispatch_one(seen) == 0  # its cursor update matched nothing: rolled back
    assert one.dispatch() == 0  # and nothing is left
    keys = [d.event_key for d in engine.facades.webhooks.deliveries(LOCAL, hook.id, limit=10, offset=0)]
    assert len(keys) == len(set(keys)) == 2


def test_a_sender_that_found_nothing_pending_looks_again_when_woken_or_after_its_poll(
    db: Database, receiver: Receiver
) -> None:
    sender = WebhookSender(db, fast_policy(poll_interval=60.0), "idle")
    try:
        assert sender.claim() is None  # nothing pending at all: no look for a poll interval
        queue(db, receiver, 1)  # as another process's dispatcher would
        assert sender.claim() is None  # not looked at: still waiting
        sender.wake()  # a delivery queued in this process
        woken = sender.claim()
        assert woken is not None
        woken.run()
    finally:
        sender.close()
    assert len(receiver.requests) == 1

    polled = WebhookSender(db, fast_policy(poll_interval=0.05), "polled")
    try:
        assert polled.claim() is None  # the only delivery went out
        queue(db, receiver, 1)
        for _ in range(1000):  # the poll interval passes: looked at again without a wake
            claimed = polled.claim()
            if claimed is not None:
                claimed.run()
                break
            time.sleep(0.01)
        else:
            raise AssertionError("the sender never looked again after its poll interval")
    finally:
        polled.close()
    assert len(receiver.requests) == 2
