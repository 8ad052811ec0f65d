"""Desired-state versions and their resources: the bodies of ``/api/v1/desired_state``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class DesiredStateVersionOut(BaseModel):
    """The header of a version: which sets it replaced or deleted, and how many resources it holds."""

    version: int
    kind: str
    base: int | None
    compile_id: str | None
    created_at: datetime
    sets_replaced: list[str]
    sets_deleted: list[str]
    resource_count: int


class DesiredStateOut(DesiredStateVersionOut):
    """A version with its resource sets (set name -> resource ids) and the shared resource ids."""

    sets: dict[str, list[str]]
    shared: list[str]


class DesiredStateResourceOut(BaseModel):
    """One resource of a version; ``set`` is ``None`` for a shared resource."""

    id: str
    set: str | None
    attributes: dict[str, Any]
    requires: list[str]
