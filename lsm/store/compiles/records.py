"""What exports record for the next full compile: per-instance and per-tree shared records, markers.

Why one module: an incremental full compile (``lsm.compiler.incremental``) decides which trees
to refine from three tables the export keeps beside the desired state, and these are their
statements. ``lsm_instance_resources`` says, per instance, which resources it produced and at
which ``(version, state)`` it was compiled; ``lsm_tree_shared`` says which shared resources each
tree produced, with their content hash; ``lsm_instance_change`` holds the change markers the
database trigger writes (``lsm.store.instances.changes``). The compiler decides what to keep
and what to refine; these functions only read and write rows, on the caller's connection (the
export's transaction), keyed by environment, tree names and instance ids.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from lsm.store.batches import chunks
from lsm.store.desired_state.diff import SHARED_SET
from lsm.store.desired_state.statements import bulk_insert
from lsm.store.desired_state.tables import ds_resource
from lsm.store.tables import InstanceChangeRow, InstanceResourcesRow, TreeSharedRow

_RECORDS: sa.Table = InstanceResourcesRow.metadata.tables["lsm_instance_resources"]
_CHANGES: sa.Table = InstanceChangeRow.metadata.tables["lsm_instance_change"]
_TREE_SHARED: sa.Table = TreeSharedRow.metadata.tables["lsm_tree_shared"]

#: the statements every export runs, built once
_DELETE_RECORDS = sa.delete(_RECORDS).where(_RECORDS.c.env_id == sa.bindparam("b_env"))
_DELETE_TREE_RECORDS = _DELETE_RECORDS.where(_RECORDS.c.set_name.in_(sa.bindparam("b_names", expanding=True)))
_INSERT_RECORDS = sa.insert(_RECORDS)
_DELETE_TREES = sa.delete(_TREE_SHARED).where(
    _TREE_SHARED.c.set_name.in_(sa.bindparam("b_names", expanding=True)),
    _TREE_SHARED.c.env_id == sa.bindparam("b_env"),
)
#: a marker a compile saw, only if its version did not move since it was read
_REMOVE_SEEN = sa.delete(_CHANGES).where(
    _CHANGES.c.env_id == sa.bindparam("b_env"),
    _CHANGES.c.instance_id == sa.bindparam("b_iid"),
    _CHANGES.c.version <= sa.bindparam("b_seen"),
)

#: a recorded instance: ``((instance version, instance state), tree root)``
Recorded = tuple[tuple[int | None, str | None], str]


# -- per-instance records ---------------------------------------------------------------------
def recorded(conn: sa.Connection, env_id: str, instance_ids: Sequence[str]) -> dict[str, Recorded]:
    """Instance id -> its recorded ``(version, state)`` and tree root, for those of ``instance_ids``
    that have a record."""
    r = _RECORDS.c
    found: dict[str, Recorded] = {}
    for chunk in chunks(instance_ids):
        query = sa.select(r.instance_id, r.instance_version, r.instance_state, r.set_name).where(
            r.env_id == env_id, r.instance_id.in_(chunk)
        )
        for iid, version, state, root in conn.execute(query):
            found[iid] = ((version, state), root)
    return found


def replace_records(
    conn: sa.Connection,
    env_id: str,
    rows: list[dict[str, Any]],
    *,
    version: int,
    trees: Collection[str] | None,
) -> None:
    """Replace the per-instance records of ``trees`` (every tree when None) with ``rows``, at ``version``."""
    if trees is None:
        conn.execute(_DELETE_RECORDS, {"b_env": env_id})
    else:
        if not trees:
            return
        conn.execute(_DELETE_TREE_RECORDS, {"b_env": env_id, "b_names": sorted(trees)})
    for row in rows:
        row["desired_state_version"] = version
    for start in range(0, len(rows), 5000):
        conn.execute(_INSERT_RECORDS, rows[start : start + 5000])


# -- per-tree shared records ----------------------------------------------------------------------
def replace_tree_shared(
    conn: sa.Connection, env_id: str, rows: Mapping[tuple[str, str], str], *, trees: Collection[str] | None
) -> None:
    """Replace the shared-resource records of ``trees`` (every tree when None) with ``rows``:
    ``(tree root, shared resource id) -> content hash``."""
    if trees is None:
        conn.execute(sa.delete(_TREE_SHARED).where(_TREE_SHARED.c.env_id == env_id))
    else:
        for chunk in chunks(sorted(trees)):
            conn.execute(_DELETE_TREES, {"b_env": env_id, "b_names": chunk})
    bulk_insert(
        conn,
        _TREE_SHARED,
        ("set_name", "env_id", "resource_id", "content_hash"),
        [(root, env_id, rid, content_hash) for (root, rid), content_hash in rows.items()],
    )


def tree_sharing_otherwise(
    conn: sa.Connection, env_id: str, resource_id: str, content_hash: str
) -> str | None:
    """A tree that records shared ``resource_id`` with another content than ``content_hash``, if any.

    Two range probes (``<`` and ``>``: ``!=`` would walk every producer).
    """
    t = _TREE_SHARED.c
    for other in (t.content_hash < content_hash, t.content_hash > content_hash):
        query = sa.select(t.set_name).where(t.resource_id == resource_id, t.env_id == env_id, other).limit(1)
        kept = conn.execute(query).scalar_one_or_none()
        if kept is not None:
            return str(kept)
    return None


def unproduced_shared(conn: sa.Connection, env_id: str) -> list[str]:
    """Current shared resources that no tree records any more, sorted.

    One probe per current shared row through ``ix_lsm_tree_shared_resource``.
    """
    d, t = ds_resource.c, _TREE_SHARED.c
    produced = sa.exists().where(t.resource_id == d.resource_id, t.env_id == env_id)
    query = sa.select(d.resource_id).where(
        d.set_name == SHARED_SET, d.env_id == env_id, d.superseded_in.is_(None), ~produced
    )
    return sorted(conn.execute(query).scalars())


# -- change markers -------------------------------------------------------------------------------
def read_markers(conn: sa.Connection, env_id: str) -> dict[str, int]:
    """Instance id -> marker version, for every change marker of ``env_id`` (a key range)."""
    m = _CHANGES.c
    query = sa.select(m.instance_id, m.version).where(m.env_id == env_id)
    return {iid: version for iid, version in conn.execute(query)}


def remove_markers(conn: sa.Connection, env_id: str, seen: Iterable[tuple[str, int]]) -> None:
    """Remove the markers ``(instance id, version read)``, each only if its version did not move
    since (a change committed meanwhile keeps its marker)."""
    params = [{"b_env": env_id, "b_iid": iid, "b_seen": version} for iid, version in seen]
    if params:
        conn.execute(_REMOVE_SEEN, params)


def remove_covered_markers(conn: sa.Connection, env_id: str) -> None:
    """Remove every marker whose instance is recorded at its version or later (one statement)."""
    m, r = _CHANGES.c, _RECORDS.c
    covered = sa.exists().where(
        r.env_id == env_id, r.instance_id == m.instance_id, r.instance_version >= m.version
    )
    conn.execute(sa.delete(_CHANGES).where(m.env_id == env_id, covered))


__all__ = [
    "Recorded",
    "read_markers",
    "recorded",
    "remove_covered_markers",
    "remove_markers",
    "replace_records",
    "replace_tree_shared",
    "tree_sharing_otherwise",
    "unproduced_shared",
]
