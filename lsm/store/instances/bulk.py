"""Bulk import of service instances: many rows in one statement, for migrations and benchmarks.

Why: importing an existing inventory (or building a 100k-instance benchmark) one lifecycle
step at a time would run a validation compile per instance. ``import_instances`` writes rows
that are already validated and placed in a given state, with their active attributes set,
their identity and owner cached and their relation index filled, in a few executemany calls.
It bypasses the lifecycle on purpose; its one caller is ``lsm.orchestration.imports``, which
validates the attributes and relations first (the orchestration stays the only writer of
instance state). Each instance gets an ``import`` line in its event log.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session

from lsm.store.tables import EventRow, InstanceRefRow, InstanceRow, utcnow


def import_instances(
    session: Session,
    env_id: str,
    entity: str,
    state: str,
    attribute_sets: Sequence[dict[str, Any]],
    *,
    identity: str | None = None,
    relation_to_owner: str | None = None,
    relations: Iterable[str] = (),
    ids: Sequence[str] | None = None,
    desired_state_version: int = 1,
    chunk: int = 5000,
) -> list[str]:
    """Insert instances with ``active_attributes`` set; returns their ids in input order."""
    now = utcnow()
    relation_names = list(relations)
    new_ids = list(ids) if ids is not None else [str(uuid.uuid4()) for _ in attribute_sets]
    rows: list[dict[str, Any]] = []
    refs: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for instance_id, attributes in zip(new_ids, attribute_sets, strict=True):
        rows.append(
            {
                "id": instance_id,
                "env_id": env_id,
                "entity": entity,
                "state": state,
                "version": 1,
                "desired_state_version": desired_state_version,
                "candidate_attributes": None,
                "active_attributes": attributes,
                "rollback_attributes": None,
                "config": {},
                "identity": None if identity is None else str(attributes[identity]),
                "owner_id": None if relation_to_owner is None else str(attributes[relation_to_owner]),
                "deleted": False,
                "created_at": now,
                "last_updated": now,
            }
        )
        events.append(
            {
                "env_id": env_id,
                "instance_id": instance_id,
                "version": 1,
                "source": None,
                "target": state,
                "trigger": "import",
                "message": f"imported in state {state}",
                "compile_id": None,
                "is_error": False,
                "created_at": now,
            }
        )
        for name in relation_names:
            value = attributes.get(name)
            targets = value if isinstance(value, list) else [value] if value is not None else []
            refs.extend(
                {"env_id": env_id, "source_id": instance_id, "attribute": name, "target_id": str(t)}
                for t in targets
            )
    for start in range(0, len(rows), chunk):
        session.execute(insert(InstanceRow), rows[start : start + chunk])
    for table, values in ((InstanceRefRow, refs), (EventRow, events)):
        for start in range(0, len(values), chunk):
            session.execute(insert(table), values[start : start + chunk])
    return new_ids
