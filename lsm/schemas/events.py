"""The server-sent events of ``GET /api/v1/events``.

Two kinds, each sent as ``event: <kind>`` with a JSON ``data`` line and an ``id`` that is the
stream's position: give it back as ``Last-Event-ID`` to resume right after that event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

INSTANCE_STATE = "instance_state"
COMPILE_FINISHED = "compile_finished"


class InstanceStateEvent(BaseModel):
    """A line of an instance's event log: a transfer done (or refused, ``is_error``)."""

    instance_id: str
    service_entity: str
    source: str | None
    target: str
    version: int
    trigger: str
    compile_id: str | None
    is_error: bool
    actor: str | None
    request_id: str | None
    time: datetime


class CompileFinishedEvent(BaseModel):
    """A compile request reached ``success`` or ``failed`` (``merged_into``: the compile that ran it)."""

    id: str
    kind: str
    status: str
    desired_state_version: int | None
    merged_into: str | None
    time: datetime


class ServerEvent(BaseModel):
    """One event as the client reads it from the stream."""

    id: str | None
    event: Literal["instance_state", "compile_finished"] | str
    data: dict[str, Any]
