"""The instance dicts ``lsm.all`` returns, built alike for every kind of compile."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row

from lsm.selection import InstanceRecord
from lsm.store.tables import InstanceRow

InstanceDict = dict[str, Any]


def instance_dict(
    row: InstanceRow | InstanceRecord | Row[Any], attributes: Any, *, purge: bool = False
) -> InstanceDict:
    """The instance dict of docs/semantics.md §3, with the attribute set this compile uses."""
    return {
        "id": row.id,
        "entity": row.entity,
        "version": row.version,
        "state": row.state,
        "attributes": attributes,
        "candidate_attributes": row.candidate_attributes,
        "active_attributes": row.active_attributes,
        "rollback_attributes": row.rollback_attributes,
        "purge_resources": purge,
        "desired_state_version": row.desired_state_version,
    }
