"""Tests of lsm.model; helpers to write instance dicts the way the compiler passes them."""

from __future__ import annotations

import uuid
from typing import Any


def uid(n: int) -> str:
    """A stable instance id (references are UUIDs)."""
    return str(uuid.UUID(int=n))


def inst(
    n: int | str, attributes: dict[str, Any] | None, *, state: str = "up", version: int = 1
) -> dict[str, Any]:
    """An instance dict as the compiler passes it: ``attributes`` is the set this compile uses."""
    return {
        "id": uid(n) if isinstance(n, int) else n,
        "version": version,
        "state": state,
        "attributes": attributes,
        "candidate_attributes": None,
        "active_attributes": attributes,
        "rollback_attributes": None,
    }
