"""The read behind naming instances by entity and identity (resource sets, owner trees).

Why its own query: a resource set is named after its tree's root instance id, and a person
reads ``router 10.0.0.1`` where the store has a UUID. One keyed read per chunk of ids, on the
primary key, with only the three columns a name needs; deleted instances are named too (a set
being torn down is still that router's).
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from lsm.store.batches import chunks
from lsm.store.tables import InstanceRow


def entity_and_identity(session: Session, env_id: str, ids: list[str]) -> dict[str, tuple[str, str | None]]:
    """``{id: (entity, identity value or None)}`` for the ids that are instances of ``env_id``."""
    found: dict[str, tuple[str, str | None]] = {}
    for chunk in chunks(sorted(set(ids))):
        query = select(InstanceRow.id, InstanceRow.entity, InstanceRow.identity).where(
            InstanceRow.env_id == env_id, col(InstanceRow.id).in_(list(chunk))
        )
        for instance_id, entity, identity in session.exec(query):
            found[instance_id] = (entity, identity)
    return found
