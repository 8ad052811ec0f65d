"""Checking a resource selection before it is used: a deploy's, a dry run's, a report's.

Why one check: ``POST /api/v1/deploy`` and ``POST /api/v1/compliance`` take the same selection
(``lsm.schemas.deploy.ResourceSelection``) and must refuse the same bad ones with the same
answer: a 422 naming the field (an empty list, an empty or over-long name, an instance id that
is no UUID) or a 404 naming the instances that do not exist. A selection that is well formed
but matches nothing is not an error: it selects nothing.
"""

from __future__ import annotations

import uuid

from sqlmodel import Session

from lsm.errors import InvalidInput, UnknownInstance
from lsm.schemas.deploy import ResourceSelection
from lsm.schemas.limits import MAX_ID_LENGTH
from lsm.store.instances.repository import unknown_instance_ids

#: the longest agent name and resource type the deploy tables hold (``String(255)`` columns)
_COLUMN = 255
#: the longest value each field may hold (agents and types are columns; sets and instances ids)
_LIMITS = {
    "agents": _COLUMN,
    "types": _COLUMN,
    "sets": _COLUMN,
    "instances": MAX_ID_LENGTH,
}
#: the most values one field may list
MAX_VALUES = 1000


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def check_selection(session: Session, env_id: str, selection: ResourceSelection) -> None:
    """Refuse a malformed selection (422 naming the field) or unknown instances (404 naming them)."""
    for field, limit in _LIMITS.items():
        values: list[str] | None = getattr(selection, field)
        if values is None:
            continue
        if not values:
            raise InvalidInput(f"{field}: name at least one, or leave the field out", field=field)
        if len(values) > MAX_VALUES:
            raise InvalidInput(f"{field}: at most {MAX_VALUES} values", field=field, count=len(values))
        for value in values:
            if not value:
                raise InvalidInput(f"{field}: a value must not be empty", field=field)
            if len(value) > limit:
                raise InvalidInput(f"{field}: {value[:40]!r}... is longer than {limit}", field=field)
    for value in selection.instances or []:
        if not _is_uuid(value):
            raise InvalidInput(f"instances: {value!r} is no instance id", field="instances", value=value)
    if selection.instances:
        unknown = unknown_instance_ids(session, env_id, selection.instances)
        if unknown:
            raise UnknownInstance(
                f"instances: no instance {unknown[0]!r} in this environment", field="instances", ids=unknown
            )


__all__ = ["MAX_VALUES", "check_selection"]
