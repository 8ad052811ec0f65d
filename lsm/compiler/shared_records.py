"""Per-tree records of shared resources: what lets a full compile skip trees and still collect.

Why: a complete full compile replaces the shared set wholly, so a shared resource no instance
produces any more disappears. An incremental full compile (``lsm.compiler.incremental``) does
not refine the trees it keeps, so it must know what they share without refining them: every
export records, per tree it wrote, the shared resource ids the tree produced and their content
hash (``TreeSharedRow``). In the export's transaction, once the compiled trees' records are
replaced:

* a stored shared resource that no tree records is retired (``unproduced_shared``);
* a compiled tree sharing a resource that another (kept) tree records with another content is
  the conflict refining everything reports (``check_shared_conflicts``: the caller then
  refines everything, which raises exactly that model error).

Cost: keyed on the compiled trees and the refined shared ids, plus one index probe per stored
shared resource. Must not: decide which trees to refine, or export.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

import sqlalchemy as sa
from sqlalchemy.orm import Session

from lsm.desired_state import ResourceRecord, resource_set_hash
from lsm.desired_state.merge import SHARED
from lsm.inventory.batches import chunks
from lsm.inventory.desired_state_statements import bulk_insert
from lsm.inventory.desired_state_tables import ds_resource
from lsm.inventory.tables import TreeSharedRow
from lsm.model import RefineResult

_TREE_SHARED: sa.Table = TreeSharedRow.metadata.tables["lsm_tree_shared"]
#: the records of some trees (a partial compile's): built once
_DELETE_TREES = sa.delete(_TREE_SHARED).where(
    _TREE_SHARED.c.set_name.in_(sa.bindparam("b_names", expanding=True)),
    _TREE_SHARED.c.env_id == sa.bindparam("b_env"),
)


class SharedConflict(Exception):
    """A refined tree shares a resource that a kept tree records with another content."""

    def __init__(self, resource_id: str, kept_tree: str) -> None:
        super().__init__(
            f"shared resource {resource_id} is produced with other attributes by the kept tree {kept_tree}"
        )
        self.message = str(self)


def shared_hashes(records: Iterable[ResourceRecord]) -> dict[str, str]:
    """Shared resource id -> content hash (the hash of a set holding only that resource)."""
    return {record.id: resource_set_hash([record]) for record in records}


def replace_tree_shared(
    session: Session,
    env_id: str,
    result: RefineResult,
    hashes: Mapping[str, str],
    *,
    trees: Collection[str] | None,
) -> None:
    """Replace the shared-resource records of ``trees`` (every tree when None) from ``result``."""
    conn = session.connection()
    t = _TREE_SHARED.c
    if trees is None:
        conn.execute(sa.delete(_TREE_SHARED).where(t.env_id == env_id))
    else:
        for chunk in chunks(sorted({*trees, *result.tree_of.values()})):
            conn.execute(_DELETE_TREES, {"b_env": env_id, "b_names": chunk})
    rows: dict[tuple[str, str], str] = {}
    for instance_id, ids in result.shared_of.items():
        root = result.tree_of[instance_id]
        for rid in ids:
            rows[(root, rid)] = hashes[rid]
    bulk_insert(
        conn,
        _TREE_SHARED,
        ("set_name", "env_id", "resource_id", "content_hash"),
        [(root, env_id, rid, content_hash) for (root, rid), content_hash in rows.items()],
    )


def check_shared_conflicts(session: Session, env_id: str, hashes: Mapping[str, str]) -> None:
    """Raise ``SharedConflict`` when a recorded tree shares one of ``hashes`` with another content.

    Call after the refined trees' records were replaced: any other hash then belongs to a kept
    tree. Two range probes per id (``<`` and ``>``: ``!=`` would walk every producer).
    """
    conn = session.connection()
    t = _TREE_SHARED.c
    for rid, content_hash in sorted(hashes.items()):
        for other in (t.content_hash < content_hash, t.content_hash > content_hash):
            query = sa.select(t.set_name).where(t.resource_id == rid, t.env_id == env_id, other).limit(1)
            kept = conn.execute(query).scalar_one_or_none()
            if kept is not None:
                raise SharedConflict(rid, kept)


def unproduced_shared(session: Session, env_id: str) -> list[str]:
    """Stored shared resources that no tree records any more: what a full compile retires.

    One probe per current shared row through ``ix_lsm_tree_shared_resource``; call after the
    refined trees' records were replaced.
    """
    d, t = ds_resource.c, _TREE_SHARED.c
    produced = sa.exists().where(t.resource_id == d.resource_id, t.env_id == env_id)
    query = sa.select(d.resource_id).where(
        d.set_name == SHARED, d.env_id == env_id, d.superseded_in.is_(None), ~produced
    )
    return sorted(session.connection().execute(query).scalars())


__all__ = [
    "SharedConflict",
    "check_shared_conflicts",
    "replace_tree_shared",
    "shared_hashes",
    "unproduced_shared",
]
