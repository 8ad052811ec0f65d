"""Small helpers every keyed query of the store uses: ``IN`` lists in slices, UTC read-back.

Why one module: the deploy, discovery and desired-state statements all look rows up by lists
of ids of any length, and all read timestamps that SQLite hands back without their offset.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")

#: ids per ``IN (...)`` list: well inside SQLite's and PostgreSQL's parameter limits
CHUNK = 500


def chunks(values: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    """``values`` in slices of ``size``, for ``IN (...)`` lists of any length."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def aware(value: datetime) -> datetime:
    """A timestamp read back, timezone-aware: SQLite keeps no offset, and every stored time is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def utc(value: datetime | None) -> datetime | None:
    """``aware`` for a timestamp that may be ``None``."""
    return None if value is None else aware(value)
