"""Compliance reports: the bodies of ``/api/v1/compliance`` (docs/api.md, compliance).

A compliance report answers "is the target still as desired?" without repairing anything: each
selected resource's handler reads the live state and compares it with the newest desired
attributes, the same comparison a deploy makes, and the report says per resource:

* ``in_sync``: the target holds the desired attributes (a purged resource that is absent too);
* ``drifted``: it exists and differs (``changes`` names each field: current and desired value),
  or it is purged and still present;
* ``missing``: it does not exist on the target;
* ``error``: it could not be read (no handler, a failing read: ``error`` says why).

The agents run a report (``queued`` -> ``running`` -> ``done``; ``failed`` when it could not run
at all); its id is what ``POST`` answers, its result is what ``GET`` pages.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from lsm.schemas.deploy import ChangeOut, ResourceSelection


class ComplianceOutcome(StrEnum):
    IN_SYNC = "in_sync"
    DRIFTED = "drifted"
    MISSING = "missing"
    ERROR = "error"


class ReportStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class ComplianceRequest(ResourceSelection):
    """``POST /api/v1/compliance``: the selection to check (nothing given: the whole environment)."""


class ComplianceItemOut(BaseModel):
    """One resource of a report: what its handler found on the target."""

    id: str
    type: str
    agent: str
    set: str | None = Field(None, description="The resource set (the tree's root id); null: shared.")
    outcome: ComplianceOutcome
    changes: dict[str, ChangeOut] = {}
    error: str | None = None


class ComplianceReportOut(BaseModel):
    """A compliance report: its selection, where it stands, its counts and a page of its rows."""

    id: str
    status: ReportStatus
    selection: ResourceSelection
    version: int | None = Field(None, description="The desired-state version the deploy engine had planned.")
    created_at: datetime
    finished_at: datetime | None = None
    total: int = Field(0, description="Resources the report covers.")
    checked: int = Field(0, description="Resources checked so far.")
    counts: dict[ComplianceOutcome, int] = Field(
        default_factory=dict, description="Checked resources per outcome (outcomes with none left out)."
    )
    error: str | None = Field(None, description="Why the report could not run (status failed).")
    resources: list[ComplianceItemOut] = Field(
        default_factory=list, description="A page of the checked resources, in id order."
    )

    @property
    def finished(self) -> bool:
        return self.status in (ReportStatus.DONE, ReportStatus.FAILED)


__all__ = [
    "ComplianceItemOut",
    "ComplianceOutcome",
    "ComplianceReportOut",
    "ComplianceRequest",
    "ReportStatus",
]
