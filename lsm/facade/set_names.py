"""Resource sets named for a person: by their root instance's entity and identity.

Why one function: a set's id is its tree's root instance id, and every answer that carries one
(a version's sets, a resource, an instance's resources) gives ``set_name`` beside it, the same
words everywhere: ``router 10.0.0.1``, or the entity and the short id when the entity has no
identity. A set whose root is not an instance of the environment has no name (left out).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlmodel import Session

from lsm.store.instances.names import entity_and_identity

#: how many characters of a root's id name a set whose entity has no identity
SHORT_ID = 8


def set_names(session: Session, env_id: str, set_ids: Iterable[str | None]) -> dict[str, str]:
    """``{set id: name}`` for the sets of ``set_ids`` whose root is known (None: shared, skipped)."""
    wanted = sorted({i for i in set_ids if i})
    if not wanted:
        return {}
    found = entity_and_identity(session, env_id, wanted)
    return {
        i: f"{entity} {identity if identity is not None else i[:SHORT_ID]}"
        for i, (entity, identity) in found.items()
    }
