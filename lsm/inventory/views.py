"""What the API returns: instances, events, compiles and environments as pydantic models.

Built from rows by the ``from_row`` constructors so that every route returns the same shape
(docs/api.md §4) and the OpenAPI document describes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from lsm.inventory.tables import CompileRow, EnvironmentRow, EventRow, InstanceRow


class InstanceOut(BaseModel):
    id: str
    service_entity: str
    version: int
    desired_state_version: int
    state: str
    candidate_attributes: dict[str, Any] | None
    active_attributes: dict[str, Any] | None
    rollback_attributes: dict[str, Any] | None
    deleted: bool
    created_at: datetime
    last_updated: datetime
    owner: str | None
    config: dict[str, Any] = {}

    @classmethod
    def from_row(cls, row: InstanceRow) -> InstanceOut:
        return cls(
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


class EventOut(BaseModel):
    id: int
    instance_id: str
    version: int
    source: str | None
    target: str
    trigger: str
    message: str
    compile_id: str | None
    is_error: bool
    created_at: datetime

    @classmethod
    def from_row(cls, row: EventRow) -> EventOut:
        assert row.id is not None
        return cls(
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
        )


class CompileOut(BaseModel):
    id: str
    kind: str
    status: str
    requested_ids: list[str]
    service_entities: list[str]
    exclude: list[str]
    instance_id: str | None
    reason: str
    merged_into: str | None
    desired_state_version: int | None
    report: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def from_row(cls, row: CompileRow) -> CompileOut:
        return cls(
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
        )


class EnvironmentOut(BaseModel):
    id: str
    name: str
    model: str | None
    settings: dict[str, Any]
    created_at: datetime

    @classmethod
    def from_row(cls, row: EnvironmentRow, settings: dict[str, Any]) -> EnvironmentOut:
        return cls(id=row.id, name=row.name, model=row.model, settings=settings, created_at=row.created_at)
