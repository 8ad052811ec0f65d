"""The change feed of an environment: instance state changes, compile completions and deploy
outcomes, by cursor.

Why a cursor that holds every position: ``GET /api/v1/events`` sends each event with the
stream's position after it (``Cursor.encode``); a client that reconnects with it as
``Last-Event-ID`` resumes right after that event, with nothing missed and nothing repeated.
The reads are ``lsm.store.feed``; this module turns rows into ``lsm.schemas.events``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from lsm.errors import InvalidInput
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.holdback import Holdback, gap_starts
from lsm.facade.signal import Listener
from lsm.schemas.events import (
    COMPILE_FINISHED,
    DEPLOY_OUTCOME,
    INSTANCE_STATE,
    CompileFinishedEvent,
    DeployOutcomeEvent,
    InstanceStateEvent,
)
from lsm.schemas.limits import MAX_ID_LENGTH, MAX_INT
from lsm.store import feed
from lsm.store.batches import aware

#: the most rows of each kind one read returns
READ_LIMIT = 500


@dataclass(frozen=True)
class Cursor:
    """Where a stream stands: the last event-log id sent, the last finished compile sent, the
    last action-log id looked at (``None``: not known yet, the present; see ``decode``)."""

    env_id: str
    event_id: int = 0
    compile_at: datetime | None = None
    compile_id: str = ""
    action_id: int | None = 0

    def encode(self) -> str:
        """The SSE ``id``: ``<event id>/<compile finished_at ISO>/<compile id>/<action id>``."""
        at = self.compile_at.isoformat() if self.compile_at is not None else ""
        actions = "" if self.action_id is None else str(self.action_id)
        return f"{self.event_id}/{at}/{self.compile_id}/{actions}"

    @classmethod
    def decode(cls, env_id: str, text: str) -> Cursor:
        """The cursor a ``Last-Event-ID`` names (422 when it is not one of ours).

        A three-part id was written before deploy outcomes were on the stream: it resumes the
        instance and compile positions, and deploy outcomes from the present (``action_id``
        ``None``) rather than replaying the whole action log.
        """
        try:
            parts = text.split("/")
            if len(parts) == 3:
                parts.append("")
            event_id, at, compile_id, action = parts
            position = int(event_id)
            action_id = int(action) if action else None
            if (
                not 0 <= position <= MAX_INT
                or not 0 <= (action_id or 0) <= MAX_INT
                or len(compile_id) > MAX_ID_LENGTH
            ):
                raise ValueError(text)  # no row of ours has it: a database would refuse the number
            finished = datetime.fromisoformat(at) if at else None
            return cls(env_id, position, finished, compile_id, action_id)
        except ValueError:
            raise InvalidInput(
                "Last-Event-ID is not a position of this stream", field="Last-Event-ID", value=text[:100]
            ) from None


@dataclass(frozen=True)
class FeedItem:
    """One event to send, and the stream's position after it."""

    kind: str
    data: BaseModel
    cursor: Cursor
    #: when it happened (naive UTC): webhooks leave the newest items for a later look
    at: datetime | None = None


class EventsFacade:
    """Where a stream starts, and what happened after a position."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def listener(self) -> AbstractContextManager[Listener]:
        """Hear of changes made in this process (see ``lsm.facade.signal``)."""
        return self.core.changes.listener()

    def start(self, ctx: RequestContext, last_event_id: str | None = None) -> Cursor:
        """The position after ``last_event_id``, or the present (only what happens from now on)."""
        env_id = self.core.environments.context(ctx.environment).env_id
        if last_event_id:
            return self.settled(Cursor.decode(env_id, last_event_id))
        return self.present(env_id)

    def present(self, env_id: str) -> Cursor:
        """The position of the newest row of every kind: only what happens from now on."""
        with self.core.db.read() as session:
            event_id = feed.last_event_id(session, env_id)
            last = feed.last_finished_compile(session, env_id)
            action_id = feed.last_action_id(session, env_id)
        at, compile_id = last or (None, "")
        return Cursor(env_id, event_id, at, compile_id, action_id)

    def settled(self, cursor: Cursor) -> Cursor:
        """``cursor`` with an unknown action position (an old ``Last-Event-ID``) set to the present."""
        if cursor.action_id is not None:
            return cursor
        with self.core.db.read() as session:
            return replace(cursor, action_id=feed.last_action_id(session, cursor.env_id))

    def read(
        self, cursor: Cursor, limit: int = READ_LIMIT, *, holdback: Holdback | None = None
    ) -> list[FeedItem]:
        """What happened after ``cursor``, oldest first by time.

        Each kind comes in the order of its own position (ids, ``(finished_at, id)``) and the
        kinds are merged by time, so the cursor of every kind only moves forward. A reader that
        keeps reading after what it got (a stream) passes its ``holdback``: on PostgreSQL it
        keeps back what a transaction still committing could come before
        (``lsm.facade.holdback``); without one, such a transaction can be passed for good.
        """
        cursor = self.settled(cursor)
        assert cursor.action_id is not None
        with self.core.db.read() as session:
            events = feed.events_after(session, cursor.env_id, cursor.event_id, limit)
            after = (cursor.compile_at, cursor.compile_id) if cursor.compile_at is not None else None
            compiles = feed.compiles_finished_after(session, cursor.env_id, after, limit)
            actions = feed.actions_after(session, cursor.env_id, cursor.action_id, limit)
            if holdback is not None and not self.core.db.is_sqlite:
                events = holdback.before_gaps(
                    "event",
                    events,
                    lambda e: int(e[0].id or 0),
                    _gaps(session, "event", cursor.event_id, [int(e[0].id or 0) for e in events]),
                )
                actions = holdback.before_gaps(
                    "action",
                    actions,
                    lambda a: int(a["id"]),
                    _gaps(session, "action", cursor.action_id, [int(a["id"]) for a in actions]),
                )
                if compiles:
                    compiles = holdback.finished_before(
                        compiles,
                        lambda c: c.finished_at or c.created_at,
                        lambda c: c.id,
                        feed.running_since(session, cursor.env_id),
                    )
        state_items: list[_Pending] = []
        for event, entity in events:
            assert event.id is not None
            data = InstanceStateEvent(
                instance_id=event.instance_id,
                service_entity=entity,
                source=event.source,
                target=event.target,
                version=event.version,
                trigger=event.trigger,
                compile_id=event.compile_id,
                is_error=event.is_error,
                actor=event.actor,
                request_id=event.request_id,
                time=event.created_at,
                message=event.message,
            )
            state_items.append(
                _Pending(_naive(event.created_at), 0, INSTANCE_STATE, data, {"event_id": event.id})
            )
        compile_items: list[_Pending] = []
        for row in compiles:
            assert row.finished_at is not None
            done = CompileFinishedEvent(
                id=row.id,
                kind=row.kind,
                status=row.status,
                desired_state_version=row.desired_state_version,
                merged_into=row.merged_into,
                time=row.finished_at,
            )
            position = {"compile_at": row.finished_at, "compile_id": row.id}
            compile_items.append(_Pending(_naive(row.finished_at), 1, COMPILE_FINISHED, done, position))
        action_items = [_outcome(row) for row in actions]
        out = []
        for item in _merged(state_items, compile_items, action_items):
            cursor = replace(cursor, **item.position)
            out.append(FeedItem(item.kind, item.data, cursor, item.time))
        return out


def _gaps(session: Any, kind: str, after: int, ids: list[int]) -> list[int]:
    """The starts of the runs of ids between ``after`` and the last of ``ids`` that this
    snapshot does not see (any environment's rows count: ids come from one sequence)."""
    if not ids:
        return []
    return gap_starts(after, feed.ids_between(session, kind, after, ids[-1]))


@dataclass(frozen=True)
class _Pending:
    """A row turned into an event, with its time, its kind's rank, and the cursor fields it sets."""

    time: datetime
    rank: int
    kind: str
    data: BaseModel
    position: dict[str, Any]


def _merged(*kinds: list[_Pending]) -> Iterator[_Pending]:
    """The kinds merged by time (ties: instance changes, compiles, deploys), each kept in order."""
    return heapq.merge(*kinds, key=lambda item: (item.time, item.rank))


def _outcome(values: Mapping[str, Any]) -> _Pending:
    """A deploy outcome from an action-log row; its time is when the run ended."""
    ended = values["started_at"] + timedelta(milliseconds=values["duration_ms"] or 0.0)
    errors = [m.get("message") for m in values["messages"] or [] if m.get("level") == "error"]
    data = DeployOutcomeEvent(
        action_id=values["id"],
        resource_id=values["resource_id"],
        version=values["version"],
        action=values["action"],
        status=values["status"],
        agent=values["agent"],
        error=str(errors[-1]) if errors else None,
        time=aware(ended),
    )
    return _Pending(_naive(ended), 2, DEPLOY_OUTCOME, data, {"action_id": values["id"]})


def _naive(at: datetime) -> datetime:
    """Comparable whatever the backend returned (SQLite drops the time zone; both are UTC)."""
    return at.replace(tzinfo=None)
