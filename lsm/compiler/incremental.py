"""Incremental full compiles: refine only the trees that changed, keep the others as stored.

A full compile must store exactly what refining every exporting instance would give. Refining
100,000 trees to rewrite one is what made it cost ~15 s; this module finds what changed and
lets the runner refine only that, under the assumption partial compiles already make: *a
tree's resources depend only on what the environment's selector selects for it*. Under that
assumption a tree whose instances (and everything its selection would see) are as they were
when it was compiled refines into the resources stored for it, so it may be kept untouched
(copy-on-write: no row written for it). Reasoning, point by point:

* **What changed.** Every export records, per instance, the ``version`` and ``state`` it was
  compiled at (``InstanceResourcesRow``). The orchestration is the only writer of instances
  and bumps ``version`` on every executed transfer (any attribute-set operation, state move,
  delete, validation allocation), so "changed" is: a live exporting instance whose row differs
  from its record or has none (new), or a record whose instance is gone, deleted, or moved on
  (``find_changes``: two indexed join queries, no refine). The changed instances, and the
  recorded roots of the gone ones, are handed to the environment's selector exactly as a
  partial compile of them would be: it picks whole trees (and, for selectors that follow
  relations, the trees that depend on them). Those trees are refined and replace their sets;
  a selected tree that produces nothing, or whose root is gone, has its set deleted; every
  other set keeps its revision.
* **When nothing may be skipped.** The records describe the model they were refined with. The
  environment fingerprint (``environment_fingerprint``: the hash of the model's source files
  taken at load, the engine version, the selector setting and the lifecycles of the bindings)
  is stored with each version; a full export sets it, a partial one keeps it only when it is
  the same. A missing or different fingerprint (a new model, an edited one, a database
  upgraded from before the records existed) makes the compile complete. So does an explicit
  request (``incremental: false``: an operator who suspects drift), the first compile of an
  environment, and a model loaded without files (no fingerprint).
* **Shared resources.** A complete full compile garbage-collects shared resources that no
  instance produces any more. Skipped trees are not refined, so each tree's shared resources
  and their content hash are recorded (``TreeSharedRow``), replaced with the tree's records.
  In the export's transaction, after the refined trees' records are replaced: a stored shared
  resource with no producing tree is retired; a refined tree producing a shared resource that
  a kept tree records with another content is the conflict refining everything would report,
  so the compile falls back to a complete one, which raises exactly that error.
* **Any doubt: refine everything.** Whatever fails on the incremental path (a model or
  selector error, an export rule, a shared conflict) may be an artefact of refining a subset
  (a ``requires`` of a shared resource that only a kept tree produces, say), so the runner
  retries complete and reports why: the result, or the error, is then exactly the complete one.

The report says which trees were refined, kept and deleted, or why the compile ran complete.
Cost: two join queries over the instance and record indexes (linear in rows, but no Python
work per row), one probe per stored shared resource, and the refine and export of what
changed. Must not: export, or decide anything a partial compile decides differently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from lsm import __version__
from lsm.desired_state import ExportRequest, ResourceRecord, resource_set_hash
from lsm.desired_state.merge import SHARED
from lsm.desired_state.records import VersionInfo, canonical_json
from lsm.desired_state.statements import bulk_insert, chunks
from lsm.inventory.desired_state_tables import ds_resource
from lsm.inventory.tables import InstanceResourcesRow, InstanceRow, TreeSharedRow
from lsm.model import RefineResult
from lsm.orchestration import EnvironmentContext

_INSTANCES: sa.Table = InstanceRow.metadata.tables["lsm_instance"]
_RECORDS: sa.Table = InstanceResourcesRow.metadata.tables["lsm_instance_resources"]
_TREE_SHARED: sa.Table = TreeSharedRow.metadata.tables["lsm_tree_shared"]


class SharedConflict(Exception):
    """A refined tree shares a resource that a kept tree records with another content."""

    def __init__(self, resource_id: str, kept_tree: str) -> None:
        super().__init__(
            f"shared resource {resource_id} is produced with other attributes by the kept tree {kept_tree}"
        )
        self.message = str(self)


def environment_fingerprint(ctx: EnvironmentContext) -> str | None:
    """What a full compile's output depends on besides the inventory; ``None``: unknown."""
    model = ctx.model.fingerprint
    if model is None:
        return None
    parts = {
        "model": model,
        "engine": __version__,
        "selector": ctx.settings.selector,
        "lifecycles": {b.name: ctx.lifecycle(b).model_dump(mode="json") for b in ctx.catalog},
    }
    return hashlib.blake2b(canonical_json(parts).encode(), digest_size=16).hexdigest()


def complete_reason(
    *, requested_complete: bool, latest: VersionInfo | None, fingerprint: str | None
) -> str | None:
    """Why this full compile must refine everything, or ``None`` when it may be incremental."""
    if latest is None:
        return "first compile of the environment"
    if requested_complete:
        return "requested (incremental: false)"
    if fingerprint is None:
        return "the model has no fingerprint (not loaded from files)"
    if latest.model_fingerprint is None:
        return "the stored version has no model fingerprint (older release, or refined with two models)"
    if latest.model_fingerprint != fingerprint:
        return "the model, its lifecycles, the selector or the engine changed since the stored version"
    return None


@dataclass
class Changes:
    """What changed since the stored records: the input of an incremental full compile."""

    #: live instance ids (changed ones, and the live recorded roots of gone ones) to select from
    requested: list[str] = field(default_factory=list)
    #: recorded tree roots whose root instance is no longer in the inventory at all
    gone_roots: list[str] = field(default_factory=list)
    #: how many trees the records hold
    recorded_trees: int = 0
    changed_instances: int = 0


def find_changes(session: Session, ctx: EnvironmentContext) -> Changes:
    """Instances whose live row differs from the record of their last compile (module doc)."""
    conn = session.connection()
    i, r = _INSTANCES.c, _RECORDS.c
    changed: dict[str, None] = {}
    joined = _INSTANCES.outerjoin(_RECORDS, sa.and_(r.env_id == i.env_id, r.instance_id == i.id))
    differs = sa.or_(
        r.instance_id.is_(None),
        r.instance_version.is_(None),
        r.instance_version != i.version,
        r.instance_state != i.state,
    )
    for binding in ctx.catalog:
        states = [s.name for s in ctx.lifecycle(binding).states if s.export_resources]
        if not states:
            continue
        query = (
            sa.select(i.id)
            .select_from(joined)
            .where(
                i.env_id == ctx.env_id, i.entity == binding.name, i.state.in_(states), i.deleted.is_(False)
            )
            .where(differs)
        )
        changed.update(dict.fromkeys(conn.execute(query).scalars()))
    # records whose instance moved on (any transfer bumps the version), was deleted, or is gone
    recorded = _RECORDS.outerjoin(_INSTANCES, sa.and_(i.env_id == r.env_id, i.id == r.instance_id))
    query = (
        sa.select(r.instance_id, r.set_name, i.id.is_not(None))
        .select_from(recorded)
        .where(r.env_id == ctx.env_id)
        .where(
            sa.or_(
                i.id.is_(None),
                i.deleted.is_(True),
                r.instance_version.is_(None),
                i.version != r.instance_version,
                i.state != r.instance_state,
            )
        )
    )
    roots: dict[str, None] = {}
    for instance_id, root, exists in conn.execute(query):
        if exists:
            changed[instance_id] = None
        roots[root] = None
    live_roots = _existing(conn, ctx.env_id, list(roots))
    recorded_trees = conn.execute(
        sa.select(sa.func.count(sa.distinct(r.set_name))).where(r.env_id == ctx.env_id)
    ).scalar_one()
    return Changes(
        requested=list(dict.fromkeys([*changed, *(root for root in roots if root in live_roots)])),
        gone_roots=sorted(root for root in roots if root not in live_roots),
        recorded_trees=int(recorded_trees),
        changed_instances=len(changed),
    )


def _existing(conn: sa.Connection, env_id: str, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in chunks(ids):
        query = sa.select(_INSTANCES.c.id).where(_INSTANCES.c.env_id == env_id, _INSTANCES.c.id.in_(chunk))
        found.update(conn.execute(query).scalars())
    return found


def recorded_among(session: Session, env_id: str, trees: Iterable[str]) -> int:
    """How many of ``trees`` the records hold (to report the kept trees)."""
    conn = session.connection()
    found: set[str] = set()
    for chunk in chunks(sorted(set(trees))):
        query = sa.select(_RECORDS.c.set_name).where(
            _RECORDS.c.env_id == env_id, _RECORDS.c.set_name.in_(chunk)
        )
        found.update(conn.execute(query).scalars())
    return len(found)


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
            conn.execute(sa.delete(_TREE_SHARED).where(t.set_name.in_(chunk), t.env_id == env_id))
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


def incremental_request(
    partial: ExportRequest, *, retired: list[str], fingerprint: str | None
) -> ExportRequest:
    """The partial-shaped request of the refined trees, as an incremental full export."""
    return ExportRequest(
        "full",
        sets=partial.sets,
        shared=partial.shared,
        deleted_sets=partial.deleted_sets,
        compile_id=partial.compile_id,
        incremental=True,
        retired_shared=retired,
        model_fingerprint=fingerprint,
    )


def tree_report(changes: Changes, *, refined: int, deleted: int, touched_recorded: int) -> dict[str, Any]:
    """The report's account of an incremental full compile."""
    return {
        "changed_instances": changes.changed_instances,
        "trees_refined": refined,
        "trees_deleted": deleted,
        "trees_kept": max(changes.recorded_trees - touched_recorded, 0),
    }


__all__ = [
    "Changes",
    "SharedConflict",
    "check_shared_conflicts",
    "complete_reason",
    "environment_fingerprint",
    "find_changes",
    "incremental_request",
    "recorded_among",
    "replace_tree_shared",
    "shared_hashes",
    "tree_report",
    "unproduced_shared",
]
