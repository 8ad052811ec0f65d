"""The change feed on PostgreSQL never passes a position a committing transaction still holds.

Each race is built for real with two connections: one transaction takes a position (an
event-log id, a compile's ``finished_at``) and stays open while a second one takes the next
position and commits. A reader with a ``Holdback`` (as ``GET /api/v1/events`` keeps one per
stream) must not send the second before the first; the same read without one shows the loss
the hold-back prevents. PostgreSQL only: SQLite commits one writer at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from sqlmodel import Session

from lsm.facade import RequestContext
from lsm.facade.holdback import Holdback, gap_starts
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.compiles import CompileStatus
from lsm.schemas.events import COMPILE_FINISHED, INSTANCE_STATE
from lsm.schemas.webhooks import DeliveryPolicy
from lsm.services.webhook_dispatch import WebhookDispatcher
from lsm.store.compiles import queue as compile_queue
from lsm.store.database import Database
from lsm.store.instances import repository
from lsm.store.tables import InstanceRow, utcnow
from lsm.store.webhooks import statements as webhooks

LOCAL = RequestContext.local()
NEVER = 3600.0  # a hold-back that never gives up within a test


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime], db: Database) -> ApiRuntime:
    if db.is_sqlite:
        pytest.skip("SQLite commits one writer at a time: positions are taken in commit order")
    return engine_factory()


def _instance(engine: ApiRuntime) -> InstanceRow:
    created = engine.facades.inventory.create_instance(LOCAL, "thing", {"name": "t1"})
    with engine.core.db.read() as session:
        row = session.get(InstanceRow, created.id)
    assert row is not None
    return row


def _event(session: Session, row: InstanceRow, trigger: str) -> None:
    values = repository.event_values(row, source="a", target="b", trigger=trigger, message=trigger)
    repository.insert_events(session, [values])


def test_an_event_committed_after_a_later_one_is_still_sent_first(engine: ApiRuntime) -> None:
    db = engine.core.db
    row = _instance(engine)
    start = engine.facades.events.start(LOCAL)
    with Session(db.write_engine) as slow:
        _event(slow, row, "first")  # takes its id now, commits last
        with db.write() as fast:
            _event(fast, row, "second")
        held = Holdback(settle=NEVER)
        assert engine.facades.events.read(start, holdback=held) == []
        unguarded = engine.facades.events.read(start)
        # sent alone, "first" would be lost
        assert [i.data.model_dump()["trigger"] for i in unguarded] == ["second"]
        slow.commit()
    items = engine.facades.events.read(start, holdback=held)
    assert [(i.kind, i.data.model_dump()["trigger"]) for i in items] == [
        (INSTANCE_STATE, "first"),
        (INSTANCE_STATE, "second"),
    ]
    assert items[0].cursor.event_id < items[1].cursor.event_id


def test_an_id_that_never_commits_is_given_up_after_the_settle_time(engine: ApiRuntime) -> None:
    db = engine.core.db
    row = _instance(engine)
    start = engine.facades.events.start(LOCAL)
    with Session(db.write_engine) as rolled_back:
        _event(rolled_back, row, "never")
        with db.write() as fast:
            _event(fast, row, "kept")
        rolled_back.rollback()
    now = [0.0]
    held = Holdback(settle=2.0, clock=lambda: now[0])
    assert engine.facades.events.read(start, holdback=held) == []
    now[0] = 1.9
    assert engine.facades.events.read(start, holdback=held) == []
    now[0] = 2.0
    items = engine.facades.events.read(start, holdback=held)
    assert [(i.kind, i.data.model_dump()["trigger"]) for i in items] == [(INSTANCE_STATE, "kept")]


def test_a_compile_finishing_earlier_but_committing_later_is_sent_first(engine: ApiRuntime) -> None:
    db = engine.core.db
    first = engine.facades.compiles.request_compile(LOCAL, kind="full").id
    second = engine.facades.compiles.request_compile(LOCAL, kind="full").id
    began = utcnow() - timedelta(seconds=5)
    with db.write() as session:  # both running, as two workers would hold them
        claimed = compile_queue.claim(
            session, [first, second], owner="w", expires=began + timedelta(hours=1), now=began
        )
        assert set(claimed) == {first, second}
    start = engine.facades.events.start(LOCAL)
    earlier = utcnow()
    with Session(db.write_engine) as slow:
        assert _finish(slow, first, earlier)  # takes its finished_at now, commits last
        with db.write() as fast:
            assert _finish(fast, second, earlier + timedelta(milliseconds=5))
        held = Holdback(settle=NEVER)
        assert engine.facades.events.read(start, holdback=held) == []
        unguarded = engine.facades.events.read(start)
        # sent alone, the first would be lost
        assert [i.data.model_dump()["id"] for i in unguarded] == [second]
        slow.commit()
    items = engine.facades.events.read(start, holdback=held)
    assert [(i.kind, i.data.model_dump()["id"]) for i in items] == [
        (COMPILE_FINISHED, first),
        (COMPILE_FINISHED, second),
    ]


def _finish(session: Session, compile_id: str, at: datetime) -> bool:
    return compile_queue.finish(
        session,
        compile_id,
        owner="w",
        status=CompileStatus.SUCCESS,
        now=at,
        report={},
        desired_state_version=None,
    )


def test_gap_starts() -> None:
    assert gap_starts(10, []) == []
    assert gap_starts(10, [11, 12, 13]) == []
    assert gap_starts(10, [12, 13, 16]) == [11, 14]


def test_the_webhook_dispatcher_queues_an_event_committed_late_before_the_later_one(
    engine: ApiRuntime,
) -> None:
    db = engine.core.db
    row = _instance(engine)
    start = engine.facades.events.start(LOCAL)
    with db.write() as session:
        webhooks.create(
            session.connection(),
            env_id=row.env_id,
            url="http://127.0.0.1:9/never-called",
            events=["instance_state"],
            secret="s" * 20,
            cursor=start.encode(),
            created_by=None,
            now=utcnow(),
        )
    dispatcher = WebhookDispatcher(
        db, engine.facades.events, DeliveryPolicy(settle=60.0)
    )  # the longest allowed

    def queued() -> list[str]:
        with db.read() as session:
            conn = session.connection()
            (hook,) = webhooks.every_active(conn)
            rows = webhooks.deliveries(conn, hook["id"], limit=10, offset=0)
        return [
            r["payload"]["data"]["trigger"]
            for r in sorted(rows, key=lambda r: int(r["event_key"].split(":")[1]))
        ]

    with Session(db.write_engine) as slow:
        _event(slow, row, "first")
        with db.write() as fast:
            _event(fast, row, "second")
        assert dispatcher.dispatch() == 0  # "second" waits: "first" may still come
        slow.commit()
    assert dispatcher.dispatch() == 2
    assert queued() == ["first", "second"]
