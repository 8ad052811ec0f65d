"""Many instances in one request: the body and answer of ``POST .../{entity}/bulk``.

All or nothing: the server applies every item in one transaction, or none of them and answers
an error listing every refused item (``items: [{index, op, error, message, ...}]``, ``index``
counting within its ``op`` list).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from lsm.schemas.inventory import InstanceOut
from lsm.schemas.limits import MAX_ID_LENGTH, MAX_INT, MAX_REF_LENGTH

#: the most items (creates plus updates) one bulk request may hold
MAX_BULK_ITEMS = 10_000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class BulkCreate(_Body):
    attributes: dict[str, Any] = Field(description="The instance's attributes (the candidate set).")
    service_instance_id: str | None = Field(
        None, max_length=MAX_ID_LENGTH, description="A chosen instance id (a UUID); generated if absent."
    )


class BulkUpdate(_Body):
    id: str = Field(max_length=MAX_REF_LENGTH, description="An instance id, or <identity_attr>=<value>.")
    current_version: int = Field(
        ge=0, le=MAX_INT, description="The version the update is based on; 409 if it is not current."
    )
    attributes: dict[str, Any] = Field(description="Merged, top level, into the candidate set.")


class BulkRequest(_Body):
    create: list[BulkCreate] = Field(default_factory=list, max_length=MAX_BULK_ITEMS)
    update: list[BulkUpdate] = Field(default_factory=list, max_length=MAX_BULK_ITEMS)


class BulkResult(BaseModel):
    """The instances after the request (and the automatic steps that followed), in request order."""

    created: list[InstanceOut]
    updated: list[InstanceOut]
