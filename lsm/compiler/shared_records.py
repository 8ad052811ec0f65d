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

from sqlalchemy.orm import Session

from lsm.desired_state import ResourceRecord, resource_set_hash
from lsm.model import RefineResult
from lsm.store.compiles import records as compile_records


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
    rows: dict[tuple[str, str], str] = {}
    for instance_id, ids in result.shared_of.items():
        root = result.tree_of[instance_id]
        for rid in ids:
            rows[(root, rid)] = hashes[rid]
    names = None if trees is None else {*trees, *result.tree_of.values()}
    compile_records.replace_tree_shared(session.connection(), env_id, rows, trees=names)


def check_shared_conflicts(session: Session, env_id: str, hashes: Mapping[str, str]) -> None:
    """Raise ``SharedConflict`` when a recorded tree shares one of ``hashes`` with another content.

    Call after the refined trees' records were replaced: any other hash then belongs to a kept
    tree.
    """
    conn = session.connection()
    for rid, content_hash in sorted(hashes.items()):
        kept = compile_records.tree_sharing_otherwise(conn, env_id, rid, content_hash)
        if kept is not None:
            raise SharedConflict(rid, kept)


def unproduced_shared(session: Session, env_id: str) -> list[str]:
    """Stored shared resources that no tree records any more: what a full compile retires.

    Call after the refined trees' records were replaced.
    """
    return compile_records.unproduced_shared(session.connection(), env_id)


__all__ = [
    "SharedConflict",
    "check_shared_conflicts",
    "replace_tree_shared",
    "shared_hashes",
    "unproduced_shared",
]
