"""Desired-state versions and their resources: the bodies of ``/api/v1/desired_state``, and the
export a client stores with ``PUT /api/v1/desired_state`` (``lsm export``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints


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
    #: the ones of ``requires`` that the engine added (``autoedge``, docs/semantics.md §5)
    auto_requires: list[str] = []


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


#: the longest resource set name (the store's column holds 255 characters)
MAX_SET_NAME_LENGTH = 255
#: the most resources and set names one export body may list (a body is also bounded in bytes)
MAX_EXPORT_ITEMS = 1_000_000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


SetName = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_SET_NAME_LENGTH, pattern=r"^[^\x00-\x1f\x7f]+$")
]


class ResourceIn(_Body):
    """One resource of an export: its id ``Type[agent,attribute=value]``, its attributes (JSON
    values, ``agent`` among them) and the ids it requires."""

    id: str = Field(description="The resource id, Type[agent,attribute=value].")
    attributes: dict[str, Any] = Field(default_factory=dict)
    requires: list[str] = Field(default_factory=list, max_length=MAX_EXPORT_ITEMS)


class DesiredStateExportIn(_Body):
    """``PUT /api/v1/desired_state``: store a full or partial version made outside the engine's
    compiles (``lsm export``), under the export rules of docs/semantics.md §4."""

    partial: bool = Field(
        False,
        description="Only the sets listed replace their stored revisions (an empty list deletes "
        "the set); other sets stay; shared resources may be added, never changed.",
    )
    sets: dict[SetName, list[ResourceIn]] = Field(
        default_factory=dict, description="Set name -> its resources.", max_length=MAX_EXPORT_ITEMS
    )
    shared: list[ResourceIn] = Field(
        default_factory=list, description="Resources in no set.", max_length=MAX_EXPORT_ITEMS
    )
    deleted_sets: list[SetName] = Field(
        default_factory=list,
        description="Sets to delete (partial only); unknown names are ignored.",
        max_length=MAX_EXPORT_ITEMS,
    )
    soft_delete: bool = Field(
        False, description="Drop, silently, the deletion of a set that this export still fills."
    )
