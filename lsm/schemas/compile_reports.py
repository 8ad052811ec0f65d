"""Compile requests and reports: the bodies of ``/api/v1/compiles``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: the longest a ``wait`` request may wait for its compile (seconds)
MAX_COMPILE_WAIT = 300.0


class CompileOut(BaseModel):
    """A compile request and, once run, its report (``merged_into``: the compile that ran it)."""

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
    #: who asked for it: the API caller, or ``system`` for compiles the engine requested itself
    actor: str | None = None
    #: the API request (``X-Request-ID``) that caused it
    request_id: str | None = None


class CompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    kind: Literal["full", "partial"] = "full"
    instance_ids: list[str] | None = Field(None, description="Partial: these instances (and their trees).")
    service_entities: list[str] | None = Field(None, description="Partial: every instance of these entities.")
    exclude: list[str] | None = Field(None, description="Instance ids left out of the request.")
    wait: bool = Field(False, description="Answer only when the compile finished (or the timeout passed).")
    timeout: float = Field(
        MAX_COMPILE_WAIT, gt=0, le=MAX_COMPILE_WAIT, description="With wait: the longest to wait (seconds)."
    )
    selector: str | dict[str, Any] | list[str | dict[str, Any]] | None = Field(
        None, description="Partial: the selector for this compile (name, {name, params}, or a union list)."
    )
    explain: bool = Field(
        False, description="Partial: answer what would be selected and why; nothing is queued (dry run)."
    )
    incremental: bool | None = Field(
        None,
        description="Full: false refines every tree (e.g. on suspected drift); by default only the "
        "trees whose instances changed are refined, once a version with the same model exists.",
    )
