"""Incremental full compiles: refine only the trees that changed, keep the others as stored.

A full compile must store exactly what refining every exporting instance would give. Refining
every tree of a large environment to rewrite one is what made it slow; this module finds what
changed and lets the runner refine only that, under the assumption partial compiles already
make: *a tree's resources depend only on what the environment's selector selects for it*. Under that
assumption a tree whose instances (and everything its selection would see) are as they were
when it was compiled refines into the resources stored for it, so it may be kept untouched
(copy-on-write: no row written for it). Reasoning, point by point:

* **What changed.** Every export records, per instance, the ``version`` and ``state`` it was
  compiled at (``InstanceResourcesRow``). The orchestration is the only writer of instances
  and bumps ``version`` on every executed transfer (any attribute-set operation, state move,
  delete, validation allocation), so "changed" is: a live exporting instance whose pair
  differs from its record or has none (new), or a record whose instance is gone, deleted, or
  moved on. Comparing all rows grows with the inventory, so only the instances with a
  change marker are compared (``lsm.store.instances.changes``: a database trigger marks
  every written instance row, whoever writes it; a full compile removes the markers it leaves
  in sync). The changed instances, and the recorded roots of the gone ones, are handed to the
  environment's selector exactly as a partial compile of them would be: it picks whole trees
  (and, for selectors that follow relations, the trees that depend on them). Those trees are
  refined and replace their sets; a selected tree that produces nothing, or whose root is
  gone, has its set deleted; every other set keeps its revision.
* **When nothing may be skipped.** The records describe the model they were refined with. The
  environment fingerprint (``environment_fingerprint``: the hash of the model's source files
  taken at load, the engine version, the selector setting and the lifecycles of the bindings)
  is stored with each version; a full export sets it, a partial one keeps it only when it is
  the same. A missing or different fingerprint (a new model, an edited one, a database
  upgraded from before the records existed) makes the compile complete. So does an explicit
  request (``incremental: false``: an operator who suspects drift), the first compile of an
  environment, and a model loaded without files (no fingerprint).
* **Shared resources.** A complete full compile garbage-collects shared resources that no
  instance produces any more. Skipped trees are not refined, so each tree records the shared
  resources it produced and their content hash (``lsm.compiler.shared_records``), replaced
  with its other records. In the export's transaction, after the refined trees' records are
  replaced: a stored shared resource with no producing tree is retired; a refined tree
  producing a shared resource that a kept tree records with another content is the conflict
  refining everything would report, so the compile falls back to a complete one, which
  raises exactly that error.
* **Any doubt: refine everything.** Whatever fails on the incremental path (a model or
  selector error, an export rule, a shared conflict) may be an artefact of refining a subset
  (a ``requires`` of a shared resource that only a kept tree produces, say), so the runner
  retries complete and reports why: the result, or the error, is then exactly the complete one.

The report says which trees were refined, kept and deleted, or why the compile ran complete.
Cost: keyed lookups per marked instance, an index-only count of the recorded trees (for the
report), one probe per stored shared resource (the shared set is usually small), and the
refine and export of what changed. Compiles of one environment are serialized by the queue;
like any full compile, this one exports against the latest version. Must not: export, or
decide anything a partial compile decides differently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from sqlalchemy.orm import Session

from lsm.desired_state import ExportRequest
from lsm.desired_state.records import VersionInfo, canonical_json
from lsm.model.context import InstanceDict
from lsm.orchestration import EnvironmentContext
from lsm.store.compiles import records as compile_records
from lsm.store.instances import reads as instance_reads

#: (model, selector, lifecycle specs) -> fingerprint; the objects are kept, so ids stay theirs
_FINGERPRINTS: dict[
    tuple[int, str | None, str, tuple[int, ...]], tuple[object, tuple[object, ...], str | None]
] = {}


def environment_fingerprint(ctx: EnvironmentContext) -> str | None:
    """What a full compile's output depends on besides the inventory; ``None``: unknown.

    Every exporting compile needs it, so it is cached per model object, selector setting and
    lifecycle objects (dumping the lifecycles would be a visible part of a partial compile).
    """
    specs = tuple(ctx.lifecycle(b) for b in ctx.catalog)
    key = (id(ctx.model), ctx.model.fingerprint, canonical_json(ctx.settings.selector), tuple(map(id, specs)))
    cached = _FINGERPRINTS.get(key)
    if (
        cached is not None
        and cached[0] is ctx.model
        and all(a is b for a, b in zip(cached[1], specs, strict=True))
    ):
        return cached[2]
    fingerprint = None
    if ctx.model.fingerprint is not None:
        parts = {
            "model": ctx.model.fingerprint,
            "engine": _engine_version(),
            "selector": ctx.settings.selector,
            "lifecycles": {
                b.name: spec.model_dump(mode="json") for b, spec in zip(ctx.catalog, specs, strict=True)
            },
        }
        fingerprint = hashlib.blake2b(canonical_json(parts).encode(), digest_size=16).hexdigest()
    if len(_FINGERPRINTS) > 256:
        _FINGERPRINTS.clear()
    _FINGERPRINTS[key] = (ctx.model, specs, fingerprint)
    return fingerprint


def _engine_version() -> str:
    try:
        return metadata.version("lsm-engine")
    except metadata.PackageNotFoundError:  # running from a source tree without installing
        return "unknown"


def complete_reason(
    *, requested_complete: bool, latest: tuple[int, str | None] | None, fingerprint: str | None
) -> str | None:
    """Why this full compile must refine everything, or ``None`` when it may be incremental.

    ``latest``: the newest version's number and model fingerprint (None: no version yet).
    """
    if latest is None:
        return "first compile of the environment"
    if requested_complete:
        return "requested (incremental: false)"
    if fingerprint is None:
        return "the model has no fingerprint (not loaded from files)"
    if latest[1] is None:
        return "the stored version has no model fingerprint (older release, or refined with two models)"
    if latest[1] != fingerprint:
        return "the model, its lifecycles, the selector or the engine changed since the stored version"
    return None


Pair = tuple[int | None, str | None]


@dataclass
class Changes:
    """What changed since the stored records: the input of an incremental full compile."""

    #: live instance ids (changed ones, and the live recorded roots of gone ones) to select from
    requested: list[str] = field(default_factory=list)
    #: recorded tree roots whose root instance is no longer in the inventory at all
    gone_roots: list[str] = field(default_factory=list)
    changed_instances: int = 0
    #: the change markers read: instance id -> marker version (``lsm.store.instances.changes``)
    seen: dict[str, int] = field(default_factory=dict)
    #: per marked instance: its live ``(version, state)`` if it is live and exporting, else None
    live: dict[str, Pair | None] = field(default_factory=dict)
    #: per marked instance with a record: its recorded pair and tree root
    recorded: dict[str, tuple[Pair, str]] = field(default_factory=dict)


def find_changes(session: Session, ctx: EnvironmentContext) -> Changes:
    """The marked instances whose live row differs from the record of their last compile.

    Costs what changed: the environment's change markers (a key range), then one keyed lookup
    per marker into the instances and into the records. A live exporting instance whose
    ``(version, state)`` is not the recorded one (or has no record) changed; so did a recorded
    instance that is no longer live and exporting (moved on, deleted, gone).
    """
    conn = session.connection()
    seen = compile_records.read_markers(conn, ctx.env_id)
    ids = sorted(seen)
    exporting = {b.name: {s.name for s in ctx.lifecycle(b).states if s.export_resources} for b in ctx.catalog}
    live: dict[str, Pair | None] = dict.fromkeys(ids)
    # by id alone, the environment checked on the rows (``lsm.store.instances.reads.rows_by_id`` says why)
    rows = instance_reads.export_states(conn, ctx.env_id, ids)
    for iid, (entity, state, version, deleted) in rows.items():
        if not deleted and state in exporting.get(entity, ()):
            live[iid] = (version, state)
    recorded = compile_records.recorded(conn, ctx.env_id, ids)
    changed = [iid for iid in ids if live[iid] != (recorded[iid][0] if iid in recorded else None)]
    roots = sorted({recorded[iid][1] for iid in changed if iid in recorded})
    live_roots = instance_reads.existing_ids(conn, ctx.env_id, roots)
    return Changes(
        requested=list(
            dict.fromkeys([*(c for c in changed if c in rows), *(t for t in roots if t in live_roots)])
        ),
        gone_roots=[root for root in roots if root not in live_roots],
        changed_instances=len(changed),
        seen=seen,
        live=live,
        recorded=recorded,
    )


def clear_markers(
    session: Session,
    env_id: str,
    changes: Changes,
    *,
    compiled: Mapping[str, Sequence[InstanceDict]],
    touched: Collection[str],
) -> int:
    """Remove the markers of the instances this compile leaves in sync with their records.

    After the export, an instance's record is what this compile wrote for it, none if its tree
    was touched without refining it, else the one it had. A marker goes when that equals the
    live pair read with it, and only if its version did not move since it was read (a change
    committed meanwhile keeps its marker). Returns how many markers were removed.
    """
    after: dict[str, Pair] = {d["id"]: (d["version"], d["state"]) for ds in compiled.values() for d in ds}
    trees = set(touched)
    done: list[tuple[str, int]] = []
    for iid, version in changes.seen.items():
        if iid in after:
            record: Pair | None = after[iid]
        elif iid in changes.recorded and changes.recorded[iid][1] not in trees:
            record = changes.recorded[iid][0]
        else:
            record = None
        if record == changes.live[iid]:
            done.append((iid, version))
    compile_records.remove_markers(session.connection(), env_id, done)
    return len(done)


def clear_covered_markers(session: Session, env_id: str) -> None:
    """After a complete compile: remove every marker whose instance is recorded at its version or later.

    Set-based (one statement), since a complete compile rewrote every record; markers of
    instances that export nothing stay for the next full compile to look at.
    """
    compile_records.remove_covered_markers(session.connection(), env_id)


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


def tree_report(changes: Changes, *, refined: int, info: VersionInfo) -> dict[str, Any]:
    """The report's account of an incremental full compile.

    ``sets_kept``: the version's sets that this export did not write (their trees were not
    refined, or refined into the same content), from the version's running set count.
    """
    kept = None if info.set_count is None else info.set_count - len(info.sets_replaced)
    return {
        "changed_instances": changes.changed_instances,
        "trees_refined": refined,
        "sets_deleted": len(info.sets_deleted),
        "sets_kept": kept,
    }


__all__ = [
    "Changes",
    "clear_covered_markers",
    "clear_markers",
    "complete_reason",
    "environment_fingerprint",
    "find_changes",
    "incremental_request",
    "tree_report",
]
