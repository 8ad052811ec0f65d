"""The stored rows an export reads before it decides anything (``lsm.store.desired_state.statements``
fetches them, ``lsm.desired_state.merge`` checks the export rules against them).

Why apart from the statements: the rules are pure code that must not import SQLAlchemy; these
plain records are all the two share.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StoredRevision:
    """The current revision of a named set, as fetched for an export."""

    name: str
    first_version: int
    content_hash: str
    resource_count: int


@dataclass(frozen=True, slots=True)
class StoredResource:
    """The current row of a resource id, as fetched for an export (``set_name`` "" = shared)."""

    resource_id: str
    set_name: str
    attributes_json: str
    requires_json: str


@dataclass(frozen=True, slots=True)
class SharedEdge:
    """A current shared resource requiring a resource of a set an export touches."""

    requirer_id: str
    required_id: str
    required_set: str


__all__ = ["SharedEdge", "StoredResource", "StoredRevision"]
