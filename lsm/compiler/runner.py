"""``CompileRunner``: runs one claimed exporting batch (full or partial) and records its report.

Why one module: the three kinds share their stages (choose instances, build the instance dicts
``lsm.all`` returns, refine, then export or report a validation outcome) and their error
handling: a model, selector or export-rule error fails the compile with a report naming what
broke, and nothing is exported. Each stage is timed for the report.

* **full**: every non-deleted instance in an exporting state, with its active attributes; the
  export replaces the whole desired state (stale shared resources are garbage-collected). The
  first compile of an environment is always full.
* **partial**: the requested ids (plus every instance of the requested entities, minus
  ``exclude``) are handed to the environment's selector; the trees it selects are refined and
  their sets replace the stored ones; a selected tree that produces nothing has its set deleted.
* **validation** compiles are batched and run by ``lsm.compiler.validation``.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlmodel import Session

from lsm.compiler import incremental, shared_records
from lsm.compiler.instances import InstanceDict, instance_dict
from lsm.compiler.isolation import CompilePool
from lsm.compiler.queue import Batch, CompileQueue, LeaseLost
from lsm.compiler.validation import ValidationBatches
from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord, VersionInfo
from lsm.errors import LsmError
from lsm.gc_pause import gc_paused
from lsm.lifecycle import AttributeSetName
from lsm.model import RefineResult, refine
from lsm.model.report import located
from lsm.orchestration import EnvironmentContext, Orchestrator
from lsm.schemas.compiles import CompileKind
from lsm.selection import BaseSelector, InstanceRecord, InventoryView
from lsm.selection import select as run_selection
from lsm.selection.diagnostics import explain_selection
from lsm.selection.specs import build_spec
from lsm.store.compiles import records as compile_records
from lsm.store.database import Database
from lsm.store.instances import reads as instance_reads
from lsm.store.tables import CompileRow
from lsm.store.transient import caused_by_transient

log = logging.getLogger(__name__)

#: garbage-collect old desired-state versions every this many exports
GC_EVERY = 10


class CompileRunner:
    def __init__(
        self,
        db: Database,
        queue: CompileQueue,
        store: DesiredStateStore,
        orchestrator: Orchestrator,
        contexts: Callable[[str], EnvironmentContext],
        pool: CompilePool | None = None,
    ) -> None:
        self.db = db
        self.queue = queue
        self.store = store
        self.orchestrator = orchestrator
        self.contexts = contexts
        #: where model code runs (``lsm.compiler.isolation``); ``None``: in the calling thread
        self.pool = pool
        self.validations = ValidationBatches(db, queue, orchestrator, self.selector, self.refine)

    def refine(
        self,
        ctx: EnvironmentContext,
        instances: Mapping[str, Sequence[InstanceDict]],
        *,
        validation: bool = False,
    ) -> RefineResult:
        """Refine ``instances`` with the environment's model, in a compile process when there is a pool."""
        if self.pool is None:
            return refine(ctx.model, instances, validation=validation)
        return self.pool.refine(ctx.model, instances, ctx.settings, validation=validation)

    def run_batch(self, env_id: str, batch: Batch) -> None:
        """Run an exporting ``batch`` and finish every request in it; never raises for a compile's
        own errors (a validation batch goes to ``lsm.compiler.validation``)."""
        if batch.kind is CompileKind.VALIDATION:
            self.validations.run(self.contexts(env_id), [batch])
            return
        timings: dict[str, float] = {}
        report: dict[str, Any] = {"merged": [row.id for row in batch.merged]}
        try:
            ctx = self.contexts(env_id)
            with gc_paused():  # the whole compile: see lsm.gc_pause
                self._export(ctx, batch, report, timings)
        except LeaseLost:
            log.warning(
                "compile %s: lease lost (taken over after its time limit); result dropped", batch.leader.id
            )
        except LsmError as exc:
            if caused_by_transient(exc):
                raise  # e.g. a selector's read met a lost connection: the service gives it back
            report["error"] = {**exc.to_body(), "traceback": exc.details.get("traceback") or _traceback(exc)}
            report["error"].update(located(exc, self._files(env_id)))
            self.queue.finish(batch, status="failed", report={**report, "timings": timings})
        except Exception as exc:  # a bug, not a model error: still recorded, never lost
            if caused_by_transient(exc):
                raise  # the database, not the compile: the service gives the batch back
            log.exception("compile %s failed unexpectedly", batch.leader.id)
            report["error"] = {
                "error": "internal",
                "message": f"{type(exc).__name__}: {exc}",
                "traceback": _traceback(exc),
                **located(exc, self._files(env_id)),
            }
            self.queue.finish(batch, status="failed", report={**report, "timings": timings})

    def _files(self, env_id: str) -> list[str]:
        """The model's source files, to locate an error in (none when the model did not load)."""
        try:
            return list(self.contexts(env_id).model.files)
        except Exception:  # the error being reported may be that the model does not load
            return []

    # -- exporting compiles ---------------------------------------------------------------------
    def _export(
        self, ctx: EnvironmentContext, batch: Batch, report: dict[str, Any], timings: dict[str, float]
    ) -> None:
        """Compile, export, and finish the batch in the export's transaction (one commit: a crash
        leaves either nothing, and the request is resumed, or the version with its report).

        A full compile is incremental when it may be (``lsm.compiler.incremental``); whatever
        fails on that path is retried complete, which gives the exact result or error."""
        started = time.perf_counter()
        fingerprint = incremental.environment_fingerprint(ctx)
        instances: dict[str, list[InstanceDict]] = {}
        roots: list[str] = []
        with self.db.read() as session:  # a partial compile reads its selection in the same snapshot
            latest = self.store.latest_fingerprint(ctx.env_id, session=session)
            full = batch.kind == "full" or latest is None
            if not full:
                instances, roots = self._select(ctx, batch, report, session=session)
        report["ran_as"] = "full" if full else "partial"
        if full:
            reason = incremental.complete_reason(
                requested_complete=_complete_requested(batch), latest=latest, fingerprint=fingerprint
            )
            if reason is None:
                try:
                    self._export_incremental(ctx, batch, report, timings, fingerprint, started)
                    return
                except (LsmError, shared_records.SharedConflict) as exc:
                    message = getattr(exc, "message", str(exc))
                    reason = f"the incremental compile failed, so everything is refined: {message}"
                    for key in ("incremental", "selected", "shared_retired"):
                        report.pop(key, None)
            report["complete"] = reason
            instances = self._load_exporting(ctx)
            report["selected"] = {name: len(dicts) for name, dicts in instances.items()}
            roots = []
        else:
            report["selected"] = {name: [d["id"] for d in dicts] for name, dicts in instances.items()}
        timings["select"] = time.perf_counter() - started
        result = self.refine(ctx, instances)
        timings.update({f"refine_{k}": v for k, v in result.timings.items()})
        request = self._export_request(
            result, full=full, roots=roots, compile_id=batch.leader.id, fingerprint=fingerprint
        )
        exported = time.perf_counter()
        trees = None if full else [*roots, *request.deleted_sets]
        # what reads nothing stored is worked out before the write lock is taken
        hashes = shared_records.shared_hashes(request.shared)
        check = self.store.prepare(request)
        index = instance_resource_rows(ctx.env_id, result, instances)
        with self.db.write() as session:
            shared_records.replace_tree_shared(session, ctx.env_id, result, hashes, trees=trees)
            info = self.store.export(ctx.env_id, check, session=session)
            self._finish_export(
                ctx,
                batch,
                session,
                result,
                instances,
                index,
                info,
                trees,
                report,
                timings,
                started=started,
                exported=exported,
            )
        self._after_export(ctx, info.number)

    def _export_incremental(
        self,
        ctx: EnvironmentContext,
        batch: Batch,
        report: dict[str, Any],
        timings: dict[str, float],
        fingerprint: str | None,
        started: float,
    ) -> None:
        """Refine the selection of what changed; keep every other tree's set as stored."""
        with self.db.read() as session:
            changes = incremental.find_changes(session, ctx)
        timings["changes"] = time.perf_counter() - started
        instances: dict[str, list[InstanceDict]] = {}
        roots: list[str] = []
        if changes.requested:
            synthetic = Batch(
                leader=CompileRow(env_id=ctx.env_id, kind="partial", requested_ids=changes.requested)
            )
            instances, roots = self._select(ctx, synthetic)
        report["selected"] = {name: len(dicts) for name, dicts in instances.items()}
        timings["select"] = time.perf_counter() - started
        result = self.refine(ctx, instances)
        timings.update({f"refine_{k}": v for k, v in result.timings.items()})
        touched = sorted({*roots, *changes.gone_roots})
        partial = self._export_request(result, full=False, roots=touched, compile_id=batch.leader.id)
        hashes = shared_records.shared_hashes(partial.shared)
        exported = time.perf_counter()
        trees = [*touched, *partial.deleted_sets]
        index = instance_resource_rows(ctx.env_id, result, instances)
        with self.db.write() as session:
            shared_records.replace_tree_shared(session, ctx.env_id, result, hashes, trees=trees)
            shared_records.check_shared_conflicts(session, ctx.env_id, hashes)
            retired = shared_records.unproduced_shared(session, ctx.env_id)
            request = incremental.incremental_request(partial, retired=retired, fingerprint=fingerprint)
            info = self.store.export(ctx.env_id, request, session=session)
            incremental.clear_markers(
                session,
                ctx.env_id,
                changes,
                compiled=instances,
                touched={*trees, *result.tree_of.values()},
            )
            report["incremental"] = incremental.tree_report(
                changes, refined=len(set(result.tree_of.values())), info=info
            )
            report["shared_retired"] = len(retired)
            self._finish_export(
                ctx,
                batch,
                session,
                result,
                instances,
                index,
                info,
                trees,
                report,
                timings,
                started=started,
                exported=exported,
            )
        self._after_export(ctx, info.number)

    def _finish_export(
        self,
        ctx: EnvironmentContext,
        batch: Batch,
        session: Session,
        result: RefineResult,
        instances: Mapping[str, list[InstanceDict]],
        index: list[dict[str, Any]],
        info: VersionInfo,
        trees: list[str] | None,
        report: dict[str, Any],
        timings: dict[str, float],
        *,
        started: float,
        exported: float,
    ) -> None:
        """Record what each instance produced (``index``, from ``instance_resource_rows``) and
        finish the batch, in the export's transaction."""
        record_instance_resources(
            session, ctx.env_id, result, index, version=info.number, full=trees is None, trees=trees or ()
        )
        if trees is None:  # every record rewritten: the change markers they cover are done
            incremental.clear_covered_markers(session, ctx.env_id)
        timings["export"] = time.perf_counter() - exported
        timings["total"] = time.perf_counter() - started
        report.update(
            instances=sum(len(d) for d in instances.values()),
            resources=result.resource_count,
            sets=len(result.sets),
            sets_replaced=len(info.sets_replaced),
            sets_deleted=info.sets_deleted,
            timings=timings,
        )
        self.queue.finish(
            batch, status="success", report=report, desired_state_version=info.number, session=session
        )

    def _after_export(self, ctx: EnvironmentContext, number: int) -> None:
        if number % GC_EVERY == 0:
            self.store.collect_garbage(ctx.env_id, keep=ctx.settings.desired_state_retention)

    def compute_full(self, ctx: EnvironmentContext) -> ExportRequest:
        """The desired state a full compile would export now, without exporting it (dry run)."""
        result = self.refine(ctx, self._load_exporting(ctx))
        return self._export_request(result, full=True, roots=(), compile_id="")

    def _export_request(
        self,
        result: RefineResult,
        *,
        full: bool,
        roots: Iterable[str],
        compile_id: str,
        fingerprint: str | None = None,
    ) -> ExportRequest:
        # a tree that produces nothing has no set: a full export leaves it out, a partial one deletes it
        sets = {name: [_record(r) for r in resources] for name, resources in result.sets.items() if resources}
        shared = [_record(r) for r in result.shared]
        if full:
            return ExportRequest(
                kind="full", sets=sets, shared=shared, compile_id=compile_id, model_fingerprint=fingerprint
            )
        deleted = sorted(root for root in set(roots) if root not in sets)
        return ExportRequest(
            kind="partial",
            sets=sets,
            shared=shared,
            deleted_sets=deleted,
            compile_id=compile_id,
            model_fingerprint=fingerprint,
        )

    def _load_exporting(self, ctx: EnvironmentContext) -> dict[str, list[InstanceDict]]:
        """Every live instance in an exporting state, per binding, through the (entity, state) index."""
        out: dict[str, list[InstanceDict]] = {}
        with self.db.read() as session:
            for binding in ctx.catalog:
                lifecycle = ctx.lifecycle(binding)
                exporting = {s.name: s.purge_resources for s in lifecycle.states if s.export_resources}
                rows = instance_reads.exporting_rows(session, ctx.env_id, binding.name, list(exporting))
                out[binding.name] = [
                    instance_dict(row, row.active_attributes, purge=exporting[row.state]) for row in rows
                ]
        return out

    def _select(
        self,
        ctx: EnvironmentContext,
        batch: Batch,
        report: dict[str, Any] | None = None,
        *,
        session: Session | None = None,
    ) -> tuple[dict[str, list[InstanceDict]], list[str]]:
        """The selector's trees for the batch's requests, with active attributes (exporting states only).

        The selector is the union of what the batch's requests name (``params["selector"]``,
        the environment's setting for a request that names none): merged requests each get at
        least what they asked for. ``report["selection"]`` says which, and why each instance
        was compiled (``lsm.selection.diagnostics``). ``session``: read in that transaction.
        """
        requested, spec = self._batch_request(ctx, batch, session=session)
        return self._selection(ctx, requested, spec, report, session=session)

    def explain(
        self,
        ctx: EnvironmentContext,
        *,
        instance_ids: Iterable[str] = (),
        service_entities: Iterable[str] = (),
        exclude: Iterable[str] = (),
        selector: Any = None,
    ) -> dict[str, Any]:
        """What a partial compile of these ids would select and why, without compiling (dry run)."""
        report: dict[str, Any] = {}
        with self.db.read() as session:
            view = InventoryView(session, ctx.env_id, ctx.catalog)
            requested = _expand(view, list(instance_ids), list(service_entities), set(exclude))
        spec = ctx.settings.selector if selector is None else selector
        instances, roots = self._selection(ctx, requested, spec, report)
        return {
            **report["selection"],
            "selected": {name: [d["id"] for d in dicts] for name, dicts in instances.items()},
            "roots": roots,
        }

    def _selection(
        self,
        ctx: EnvironmentContext,
        requested: list[str],
        spec: Any,
        report: dict[str, Any] | None,
        *,
        session: Session | None = None,
    ) -> tuple[dict[str, list[InstanceDict]], list[str]]:
        purge: dict[str, bool] = {}

        def exporting(record: InstanceRecord) -> AttributeSetName | None:
            state = ctx.lifecycle(ctx.binding(record.entity)).state(record.state)
            purge[record.id] = state.purge_resources
            return "active" if state.export_resources else None

        with self._reading(session) as session:
            view = InventoryView(session, ctx.env_id, ctx.catalog, attribute_set=exporting)
            selector = self._selector(ctx, view, spec)
            selection = run_selection(selector, requested)
            roots = selection.roots
            records = view.get_many(selection.ids)
            if report is not None:
                report["selection"] = explain_selection(view, selection, spec)
        instances = {
            name: [
                instance_dict(records[i], records[i].active_attributes, purge=purge.get(i, False))
                for i in ids
            ]
            for name, ids in selection.instances.items()
        }
        return instances, roots

    def _batch_request(
        self, ctx: EnvironmentContext, batch: Batch, *, session: Session | None = None
    ) -> tuple[list[str], Any]:
        """The requested ids of the batch, and the selector spec of its requests (a union if they differ)."""
        with self._reading(session) as session:
            view = InventoryView(session, ctx.env_id, ctx.catalog)
            requested = self._requested(view, batch)
        specs: list[Any] = []
        for row in batch.rows:
            spec = row.params.get("selector")
            spec = ctx.settings.selector if spec is None else spec
            for part in spec if isinstance(spec, list) else [spec]:
                if part not in specs:
                    specs.append(part)
        return requested, specs[0] if len(specs) == 1 else specs

    @contextmanager
    def _reading(self, session: Session | None) -> Iterator[Session]:
        """``session`` when given (the caller's read transaction), else a read transaction of its own."""
        if session is not None:
            yield session
            return
        with self.db.read() as own:
            yield own

    def _requested(self, view: InventoryView, batch: Batch) -> list[str]:
        return _expand(view, batch.requested_ids(), batch.service_entities(), batch.exclude())

    def selector(self, ctx: EnvironmentContext, view: InventoryView) -> BaseSelector:
        """The environment's selector over ``view`` (exporting and validation compiles alike)."""
        return self._selector(ctx, view)

    def _selector(self, ctx: EnvironmentContext, view: InventoryView, spec: Any = None) -> BaseSelector:
        """The selector ``spec`` names (the environment's setting by default), built for this view."""
        return build_spec(ctx.settings.selector if spec is None else spec, view, ctx.catalog, model=ctx.model)


def _expand(view: InventoryView, ids: list[str], entities: list[str], exclude: set[str]) -> list[str]:
    """Requested ids plus every live instance of the requested entities, minus ``exclude``."""
    ids = list(ids)
    for entity in entities:
        ids.extend(record.id for record in view.instances_of(entity))
    return [i for i in dict.fromkeys(ids) if i not in exclude]


def instance_resource_rows(
    env_id: str, result: RefineResult, instances: Mapping[str, Sequence[InstanceDict]] | None = None
) -> list[dict[str, Any]]:
    """The per-instance resource index rows of ``result``, for ``record_instance_resources``.

    Built apart (and before the write lock) because they read nothing stored; the version
    they belong to is only known in the export's transaction, which sets it. With
    ``instances`` (the dicts the compile refined) each row also records the instance's version
    and state at this compile: what an incremental full compile compares with.
    """
    compiled = {d["id"]: d for dicts in (instances or {}).values() for d in dicts}
    return [
        {
            "env_id": env_id,
            "instance_id": instance_id,
            "set_name": root,
            "desired_state_version": None,
            "resource_ids": [r.id for r in result.owned.get(instance_id, [])],
            "instance_version": compiled[instance_id]["version"] if instance_id in compiled else None,
            "instance_state": compiled[instance_id]["state"] if instance_id in compiled else None,
            "instance_desired_state_version": (
                compiled[instance_id].get("desired_state_version") if instance_id in compiled else None
            ),
        }
        for instance_id, root in result.tree_of.items()
    ]


def record_instance_resources(
    session: Session,
    env_id: str,
    result: RefineResult,
    rows: list[dict[str, Any]],
    *,
    version: int,
    full: bool,
    trees: Iterable[str],
) -> None:
    """Replace the per-instance resource index of the compiled trees (all of them for a full
    compile) with ``rows`` (``instance_resource_rows`` of ``result``), at ``version``."""
    names = None if full else {*trees, *result.tree_of.values()}
    compile_records.replace_records(session.connection(), env_id, rows, version=version, trees=names)


def _complete_requested(batch: Batch) -> bool:
    """Whether any request of the batch asked for a complete full compile (``incremental: false``)."""
    return any(row.params.get("incremental") is False for row in batch.rows)


def _record(resource: Any) -> ResourceRecord:
    data = resource.to_data()
    return ResourceRecord(data.id, data.attributes, data.requires, data.autoedges)


def _traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
