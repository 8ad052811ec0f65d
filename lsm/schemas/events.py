"""The server-sent events of ``GET /api/v1/events``.

Three kinds, each sent as ``event: <kind>`` with a JSON ``data`` line and an ``id`` that is the
stream's position: give it back as ``Last-Event-ID`` to resume right after that event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

INSTANCE_STATE = "instance_state"
COMPILE_FINISHED = "compile_finished"
DEPLOY_OUTCOME = "deploy_outcome"


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
    #: the event line's message: for ``export_failed``, the compile, error kind, rule,
    #: resources and sets of the failed export
    message: str = ""


class CompileFinishedEvent(BaseModel):
    """A compile request reached ``success`` or ``failed`` (``merged_into``: the compile that ran it)."""

    id: str
    kind: str
    status: str
    desired_state_version: int | None
    merged_into: str | None
    time: datetime


class DeployOutcomeEvent(BaseModel):
    """A resource's deploy ended ``deployed``, ``failed`` or ``skipped`` (one line of its action log).

    ``error``: the last error message of the run, when there is one. Dry runs are not outcomes.
    """

    action_id: int
    resource_id: str
    version: int
    action: str
    status: str
    agent: str
    error: str | None
    time: datetime


class ServerEvent(BaseModel):
    """One event as the client reads it from the stream."""

    id: str | None
    event: Literal["instance_state", "compile_finished", "deploy_outcome"] | str
    data: dict[str, Any]
