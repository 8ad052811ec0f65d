"""The reads behind the owner-tree pictures (``lsm.facade.graphs``), each bounded by a limit.

Why bounded reads: a picture of more than a few hundred boxes helps nobody, so every query here
stops at ``limit + 1`` rows; the caller turns "more than the limit" into a 422 that says how to
narrow the graph. Trees are walked through ``ix_lsm_instance_owner`` one level at a time (one
keyed query per level and chunk), never by scanning the environment.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from lsm.store.batches import chunks
from lsm.store.tables import InstanceRow


def live_instances(session: Session, env_id: str, entity: str | None, limit: int) -> list[InstanceRow]:
    """Up to ``limit + 1`` instances that are not deleted, of one entity or all, oldest first."""
    query = select(InstanceRow).where(InstanceRow.env_id == env_id, col(InstanceRow.deleted).is_(False))
    if entity is not None:
        query = query.where(InstanceRow.entity == entity)
    query = query.order_by(col(InstanceRow.created_at).asc(), col(InstanceRow.id).asc())
    return list(session.exec(query.limit(limit + 1)))


def owner_tree(session: Session, env_id: str, instance_id: str, limit: int) -> list[InstanceRow]:
    """The whole ownership tree around one instance: up to its root, then every level down.

    Deleted instances are included (a tree being torn down is still a tree). At most
    ``limit + 1`` rows; an owner cycle (not possible through the API) ends the walk up.
    """
    start = session.get(InstanceRow, instance_id)
    if start is None or start.env_id != env_id:
        return []
    root, seen_up = start, {start.id}
    while root.owner_id is not None and root.owner_id not in seen_up:
        owner = session.get(InstanceRow, root.owner_id)
        if owner is None or owner.env_id != env_id:
            break
        root = owner
        seen_up.add(owner.id)
    found: dict[str, InstanceRow] = {root.id: root}
    level = [root.id]
    while level and len(found) <= limit:
        below: list[str] = []
        for chunk in chunks(level):
            query = select(InstanceRow).where(
                InstanceRow.env_id == env_id, col(InstanceRow.owner_id).in_(list(chunk))
            )
            for row in session.exec(query.order_by(col(InstanceRow.created_at), col(InstanceRow.id))):
                if row.id not in found:
                    found[row.id] = row
                    below.append(row.id)
        level = below
    return list(found.values())[: limit + 1]
