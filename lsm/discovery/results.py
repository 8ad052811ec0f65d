"""``record_discovery``: store one successful run of a discovery resource, or nothing at all.

Why a function of its own: the agent (``lsm.deploy.batches``) runs discovery handlers like any
handler; what it must then do with ``HandlerContext.discovered`` is the same for every handler
and must be right on both backends. A run replaces what the same discovery resource found
before (docs/semantics.md §6). Bad output (a key that is not a resource id
``Type[agent,attr=value]``, attributes that do not serialise to JSON) raises
``InvalidDiscoveryOutput`` naming the entry **before anything is written**, so the previous
results stay as they were; the agent records the error in the discovery resource's action log.
A handler that raised never gets here: its previous results stay intact the same way.

Attributes may be a pydantic model (stored as its JSON dump) or any JSON value. ``NaN`` and
infinities are refused: they are not JSON and PostgreSQL's JSONB can not hold them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session

from lsm.errors import InvalidDiscoveryOutput, InvalidInput
from lsm.model.resource_id import parse_resource_id
from lsm.store.discovery.statements import FoundRow, replace_found

#: the most resources one run may report (one transaction must stay a reasonable size)
MAX_FOUND = 100_000


@dataclass(frozen=True)
class DiscoveryRecord:
    """What ``record_discovery`` stored for one run."""

    env_id: str
    discovery_resource_id: str
    agent: str
    at: datetime
    found: int
    added: int
    kept: int
    removed: list[str]


def check_discovery_output(found: object) -> list[FoundRow]:
    """``found`` (a handler's ``{resource_id: attributes}``) as rows ready to store, or
    ``InvalidDiscoveryOutput`` naming the first bad entry. Pure: call it before any transaction."""
    if not isinstance(found, Mapping):
        raise InvalidDiscoveryOutput(
            "a discovery handler must return a mapping {resource_id: attributes}, "
            f"not {type(found).__name__}",
            field="discovered",
        )
    if len(found) > MAX_FOUND:
        raise InvalidDiscoveryOutput(
            f"a discovery run may report at most {MAX_FOUND} resources, not {len(found)}",
            field="discovered",
            limit=MAX_FOUND,
        )
    parsed = []
    for key, value in found.items():
        try:
            parts = parse_resource_id(key, field="discovered")
        except InvalidInput as exc:
            raise InvalidDiscoveryOutput(exc.message, **exc.details) from None
        parsed.append((parts, _dumped(parts.id, value)))
    values = _plain_json([value for _, value in parsed], [parts.id for parts, _ in parsed])
    rows = [
        FoundRow(parts.id, parts.type, parts.agent, value)
        for (parts, _), value in zip(parsed, values, strict=True)
    ]
    rows.sort(key=lambda row: row.resource_id)
    return rows


def _dumped(resource_id: str, value: Any) -> Any:
    """A pydantic model as its JSON dump; anything else as it is (checked by ``_plain_json``)."""
    if not isinstance(value, BaseModel):
        return value
    try:
        return value.model_dump(mode="json")
    except Exception as exc:  # a model whose fields do not serialise
        raise _unserialisable(resource_id, exc) from None


def _plain_json(values: list[Any], ids: list[str]) -> list[Any]:
    """``values`` as plain JSON data (one encode and decode for the whole run), or the error
    naming the first id whose value is not JSON."""
    try:
        return list(json.loads(json.dumps(values, allow_nan=False)))
    except (TypeError, ValueError, RecursionError):
        pass
    for resource_id, value in zip(ids, values, strict=True):
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise _unserialisable(resource_id, exc) from None
    raise AssertionError("unreachable: the whole list did not encode, yet every value did")


def _unserialisable(resource_id: str, exc: Exception) -> InvalidDiscoveryOutput:
    return InvalidDiscoveryOutput(
        f"discovered resource {resource_id}: its attributes do not serialise to JSON: {exc}",
        resource_id=resource_id,
        field="discovered",
    )


def record_discovery(
    session: Session,
    env_id: str,
    discovery_resource_id: str,
    agent: str,
    found: Mapping[str, Any],
    *,
    now: datetime,
) -> DiscoveryRecord:
    """Validate and store one successful run's results in ``session`` (a write transaction),
    replacing what ``discovery_resource_id`` found before: gone ones are removed.

    Raises ``InvalidDiscoveryOutput`` (naming the bad id / value) WITHOUT writing when the
    output is bad, so the previous results stay intact; ``InvalidInput`` when
    ``discovery_resource_id`` is not a resource id itself.
    """
    parse_resource_id(discovery_resource_id, field="discovery_resource_id")
    rows = check_discovery_output(found)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    replaced = replace_found(session, env_id, discovery_resource_id, agent, rows, now=now)
    return DiscoveryRecord(
        env_id=env_id,
        discovery_resource_id=discovery_resource_id,
        agent=agent,
        at=now,
        found=len(rows),
        added=replaced.added,
        kept=replaced.kept,
        removed=replaced.removed,
    )


__all__ = ["MAX_FOUND", "DiscoveryRecord", "check_discovery_output", "record_discovery"]
