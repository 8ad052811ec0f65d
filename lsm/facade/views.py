"""Rows into the API's models (``lsm.schemas``): instances, events, compiles and environments.

Why here and not in ``lsm.schemas``: the models are shared with the client, which must not
import the tables; the conversion from rows is the server's business, and one function per
model keeps every route returning the same shape. Why not in the store: the store reads and
writes rows; which shape the API answers with is the facade's concern, above it.
"""

from __future__ import annotations

from typing import Any

from lsm.schemas.compile_reports import CompileOut
from lsm.schemas.environments import EnvironmentOut
from lsm.schemas.inventory import EventOut, InstanceOut
from lsm.store.tables import CompileRow, EnvironmentRow, EventRow, InstanceRow


def instance_out(row: InstanceRow) -> InstanceOut:
    """The API body of an instance (docs/api.md §4)."""
    return InstanceOut(
        id=row.id,
        service_entity=row.entity,
        version=row.version,
        desired_state_version=row.desired_state_version,
        state=row.state,
        candidate_attributes=row.candidate_attributes,
        active_attributes=row.active_attributes,
        rollback_attributes=row.rollback_attributes,
        deleted=row.deleted,
        created_at=row.created_at,
        last_updated=row.last_updated,
        owner=row.owner_id,
        config=row.config or {},
    )


def event_out(row: EventRow) -> EventOut:
    """The API body of an event-log line."""
    assert row.id is not None
    return EventOut(
        id=row.id,
        instance_id=row.instance_id,
        version=row.version,
        source=row.source,
        target=row.target,
        trigger=row.trigger,
        message=row.message,
        compile_id=row.compile_id,
        is_error=row.is_error,
        created_at=row.created_at,
        actor=row.actor,
        request_id=row.request_id,
    )


def compile_out(row: CompileRow) -> CompileOut:
    """The API body of a compile request and its report."""
    return CompileOut(
        id=row.id,
        kind=row.kind,
        status=row.status,
        requested_ids=list(row.requested_ids),
        service_entities=list(row.service_entities),
        exclude=list(row.exclude),
        instance_id=row.instance_id,
        reason=row.reason,
        merged_into=row.merged_into,
        desired_state_version=row.desired_state_version,
        report=dict(row.report),
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        actor=row.actor,
        request_id=row.request_id,
    )


def environment_out(row: EnvironmentRow, settings: dict[str, Any]) -> EnvironmentOut:
    """The API body of an environment, with its effective settings."""
    return EnvironmentOut(
        id=row.id, name=row.name, model=row.model, settings=settings, created_at=row.created_at
    )
