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
    #: each set's name for a person: its root instance's entity and identity (``router 10.0.0.1``),
    #: or entity and short id when the entity has no identity; a set whose root is unknown: absent
    set_names: dict[str, str] = {}


class DesiredStateOut(DesiredStateVersionOut):
    """A version with its resource sets (set name -> resource ids) and the shared resource ids;
    ``set_names`` names every set it holds, replaced or deleted."""

    sets: dict[str, list[str]]
    shared: list[str]


class DesiredStateResourceOut(BaseModel):
    """One resource of a version; ``set`` is ``None`` for a shared resource."""

    id: str
    set: str | None
    attributes: dict[str, Any]
    requires: list[str]
    #: the set's name for a person (``DesiredStateOut.set_names``); ``None`` when shared or unknown
    set_name: str | None = None


class SetChangeOut(BaseModel):
    """A named set that differs between two versions: ``added``, ``removed`` or ``changed``."""

    name: str
    change: str
    before_count: int
    after_count: int
    #: the set's name for a person (``DesiredStateOut.set_names``)
    set_name: str | None = None


class ResourceSideOut(BaseModel):
    """One side of a resource change: its set (``None``: shared), attributes and requires."""

    set: str | None
    attributes: dict[str, Any]
    requires: list[str]
    #: the set's name for a person (``DesiredStateOut.set_names``)
    set_name: str | None = None


class ResourceChangeOut(BaseModel):
    """A resource that differs; ``fields`` names the changed attributes, ``requires`` and ``set``."""

    id: str
    change: str
    fields: list[str]
    before: ResourceSideOut | None
    after: ResourceSideOut | None


class DesiredStateDiffOut(BaseModel):
    """What turns version ``from_version`` into ``to_version``: sets first, then resources."""

    from_version: int
    to_version: int
    sets: list[SetChangeOut]
    resources: list[ResourceChangeOut]
