"""The change feed of an environment: instance state changes and compile completions, by cursor.

Why a cursor that holds both positions: ``GET /api/v1/events`` sends each event with the
stream's position after it (``Cursor.encode``); a client that reconnects with it as
``Last-Event-ID`` resumes right after that event, with nothing missed and nothing repeated.
The reads are ``lsm.inventory.feed``; this module turns rows into ``lsm.schemas.events``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime

from pydantic import BaseModel

from lsm.errors import InvalidInput
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.signal import Listener
from lsm.inventory import feed
from lsm.schemas.events import COMPILE_FINISHED, INSTANCE_STATE, CompileFinishedEvent, InstanceStateEvent
from lsm.schemas.limits import MAX_ID_LENGTH, MAX_INT

#: the most rows of each kind one read returns
READ_LIMIT = 500


@dataclass(frozen=True)
class Cursor:
    """Where a stream stands: the last event-log id sent, the last finished compile sent."""

    env_id: str
    event_id: int = 0
    compile_at: datetime | None = None
    compile_id: str = ""

    def encode(self) -> str:
        """The SSE ``id``: ``<event id>/<compile finished_at ISO>/<compile id>``."""
        at = self.compile_at.isoformat() if self.compile_at is not None else ""
        return f"{self.event_id}/{at}/{self.compile_id}"

    @classmethod
    def decode(cls, env_id: str, text: str) -> Cursor:
        """The cursor a ``Last-Event-ID`` names (422 when it is not one of ours)."""
        try:
            event_id, at, compile_id = text.split("/")
            position = int(event_id)
            if not 0 <= position <= MAX_INT or len(compile_id) > MAX_ID_LENGTH:
                raise ValueError(text)  # no row of ours has it: a database would refuse the number
            return cls(env_id, position, datetime.fromisoformat(at) if at else None, compile_id)
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
            return Cursor.decode(env_id, last_event_id)
        with self.core.db.read() as session:
            event_id = feed.last_event_id(session, env_id)
            last = feed.last_finished_compile(session, env_id)
        return Cursor(env_id, event_id, *(last or (None, "")))

    def read(self, cursor: Cursor, limit: int = READ_LIMIT) -> list[FeedItem]:
        """What happened after ``cursor``, oldest first: instance changes and compiles, by time."""
        with self.core.db.read() as session:
            events = feed.events_after(session, cursor.env_id, cursor.event_id, limit)
            after = (cursor.compile_at, cursor.compile_id) if cursor.compile_at is not None else None
            compiles = feed.compiles_finished_after(session, cursor.env_id, after, limit)
        pending: list[tuple[datetime, int, BaseModel, int | None, tuple[datetime, str] | None]] = []
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
            )
            pending.append((_naive(event.created_at), 0, data, event.id, None))
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
            pending.append((_naive(row.finished_at), 1, done, None, (row.finished_at, row.id)))
        pending.sort(key=lambda item: (item[0], item[1]))
        out = []
        for _, _, payload, event_id, compile_at in pending:
            if event_id is not None:
                cursor = replace(cursor, event_id=event_id)
                out.append(FeedItem(INSTANCE_STATE, payload, cursor))
            elif compile_at is not None:
                cursor = replace(cursor, compile_at=compile_at[0], compile_id=compile_at[1])
                out.append(FeedItem(COMPILE_FINISHED, payload, cursor))
        return out


def _naive(at: datetime) -> datetime:
    """Comparable whatever the backend returned (SQLite drops the time zone; both are UTC)."""
    return at.replace(tzinfo=None)
