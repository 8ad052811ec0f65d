"""Batched validation compiles: many validations in one run, each exactly as if it ran alone.

Why: every order and every update is validated by a compile before it is promoted. Run one at
a time, validations cap the throughput of the whole engine, and no peer
does better: Inmanta runs one validation compile per update. Yet a validation compile of an
instance only sees its *selection* (its ownership tree, or what the selector adds); two
validations whose selections share no instance can not influence each other.

So a claimed batch is run in rounds. Each round reads one snapshot, computes every pending
validation's selection with that instance's own attribute-set choice (``validate_self`` for
it, ``validate_others`` for the rest), and takes, oldest first, those whose selection overlaps
none taken before it in the round (and none that a validation in another thread or worker
holds: ``SelectionLocks``). Each taken validation is refined on its own (``lsm.all`` returns
only its selection), its outcome goes to the orchestration, and the next round starts with
the validations that overlapped: they now see the outcomes before them, as they would have
one after the other. Without partial compiles a validation sees every instance, so every
round takes one.

Instances ordered together are validated together. An instance whose own validation is
still to come (its state leaves by an ``auto`` transfer that validates: ``start`` of the
``simple`` lifecycle) is in no other instance's validation compile by its ``validate_others``
set; yet a port ordered with its router, or a tunnel ordered with its ports, can only be
validated with them. So such an instance enters the compile of an instance whose selection
depends on it (its owner, what it refers to, walked up) with its ``validate_self`` set (its
candidate): the port's compile refines the router it is ordered with, and a bad router fails it
too. Siblings stay out: two ports ordered on one router are still validated one after the
other. An instance whose candidate was rejected (no validating transfer leaves ``rejected``)
stays out, as before. (Without partial
compiles a validation sees every instance, and one at a time: none is added there, or a bad
order in another tree would fail every other.)

A model error rejects only its own instance: the error, with the model's ``file:line``, is in
that instance's event log and in its request's report. A validation whose instance moved on
(a newer version, deleted) ends as ``stale``: the newer request validates it.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlmodel import Session

from lsm.compiler.instances import InstanceDict, instance_dict
from lsm.compiler.locks import SelectionLocks
from lsm.compiler.ordered import ordered_with
from lsm.compiler.queue import Batch, CompileQueue
from lsm.errors import LsmError, TimeLimitExceeded
from lsm.lifecycle import AttributeSetName
from lsm.model import RefineResult, refine
from lsm.model.report import located
from lsm.orchestration import EnvironmentContext, Orchestrator, ValidationOutcome
from lsm.selection import BaseSelector, InstanceRecord, InventoryView, run_selector
from lsm.selection.ownership import prefetch_trees
from lsm.store.batches import aware
from lsm.store.compiles.queue import open_validations_since
from lsm.store.compiles.requests import ValidationParams, validation_params
from lsm.store.database import Database
from lsm.store.instances import reads as instance_reads
from lsm.store.transient import caused_by_transient

SelectorFactory = Callable[[EnvironmentContext, InventoryView], BaseSelector]


class Refiner(Protocol):
    """Runs the model over a validation's instances (``CompileRunner.refine``: in a compile process)."""

    def __call__(
        self, ctx: EnvironmentContext, instances: Mapping[str, Sequence[InstanceDict]], *, validation: bool
    ) -> RefineResult: ...


def _in_thread(
    ctx: EnvironmentContext, instances: Mapping[str, Sequence[InstanceDict]], *, validation: bool
) -> RefineResult:
    return refine(ctx.model, instances, validation=validation)


@dataclass
class _Planned:
    batch: Batch
    row: InstanceRecord
    params: ValidationParams
    instances: dict[str, list[InstanceDict]] | None = None
    error: LsmError | None = None
    report: dict[str, Any] = field(default_factory=dict)


class ValidationBatches:
    """Runs claimed validation requests of one environment (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        queue: CompileQueue,
        orchestrator: Orchestrator,
        selector: SelectorFactory,
        refiner: Refiner = _in_thread,
    ) -> None:
        self.db = db
        self.queue = queue
        self.orchestrator = orchestrator
        self.selector = selector
        self.refiner = refiner

    def run(
        self,
        ctx: EnvironmentContext,
        batches: list[Batch],
        locks: SelectionLocks | None = None,
        *,
        started: Callable[[], None] = lambda: None,
        ended: Callable[[str], None] = lambda compile_id: None,
        more: Callable[[Session], list[Batch]] | None = None,
        claimed: Callable[[list[Batch]], None] = lambda batches: None,
    ) -> list[Batch]:
        """Run ``batches``; returns those left unrun (their selections are busy elsewhere).

        ``started`` is called before each validation's refinement (the time limit restarts).
        ``more`` claims the next requests inside the transaction that applies the last round
        (once nothing else is pending): they run next, without a claim transaction of their
        own; ``claimed`` is told of them once that transaction committed. Why: on SQLite each
        claim waited for the write lock as long as an apply did under a burst, and
        the validations waited with it.
        """
        pending = list(batches)
        size, rounds = len(pending), 0  # of the batch running now (its report's "batch")
        while pending:
            rounds += 1
            taken, pending, stale = self._plan(ctx, pending, locks, rounds, ended)
            if not taken and not stale:
                return pending  # every selection is held by another validation: later
            try:
                results = []
                for planned in taken:
                    started()
                    results.append(self._refine(ctx, planned, batch_size=size, round_=rounds))
                taken_on = self._apply(ctx, results, more=None if pending else more)
                if taken_on:  # claimed once nothing was pending: a batch of their own, from round 1
                    claimed(taken_on)
                    pending, size, rounds = taken_on, len(taken_on), 0
                for result in results:
                    ended(result.planned.batch.leader.id)
            finally:
                if locks is not None:
                    locks.release()
        return []

    # -- a round ----------------------------------------------------------------------------------
    def _plan(
        self,
        ctx: EnvironmentContext,
        pending: list[Batch],
        locks: SelectionLocks | None,
        round_: int,
        ended: Callable[[str], None],
    ) -> tuple[list[_Planned], list[Batch], bool]:
        """Which validations run this round (their selections are disjoint), which wait, and
        whether any ended here (stale)."""
        ids = [str(b.leader.instance_id) for b in pending]
        with self.db.read() as session:
            # one snapshot for the round: its rows and trees are fetched once, in batches, and
            # each validation's selector then runs on a fork of it (``InventoryView.fork``)
            snapshot = InventoryView(session, ctx.env_id, ctx.catalog)
            rows = snapshot.get_many(ids, include_terminated=True)
            everything = not ctx.settings.partial_compiles
            if not everything:
                prefetch_trees(snapshot, ids)
            taken: list[_Planned] = []
            waiting: list[Batch] = []
            used: set[str] = set()
            stale = False
            selected: list[tuple[_Planned, set[str]]] = []
            for batch in pending:
                params = validation_params(batch.leader)
                row = rows.get(str(batch.leader.instance_id))
                if row is None or row.version != params.instance_version or row.deleted:
                    self.queue.finish(batch, status="success", report={"stale": True, "round": round_})
                    ended(batch.leader.id)
                    stale = True
                    continue
                planned = _Planned(batch, row, params)
                if everything:
                    if selected:  # one at a time: each sees the whole inventory
                        waiting.append(batch)
                        continue
                    planned.instances = self._everything(session, ctx, row)
                    selected.append((planned, {"*"}))
                    continue
                selected.append((planned, self._select(snapshot, ctx, planned)))
            # an older validation of an instance a selection holds (queued, running here or in
            # another thread or worker) goes first: its outcome can change what this one sees
            older = open_validations_since(
                session, ctx.env_id, sorted({i for _, sel in selected for i in sel})
            )
            free: list[tuple[_Planned, set[str]]] = []
            for planned, selection in selected:
                made = planned.batch.leader.created_at
                behind = any(
                    (since := older.get(i)) is not None and aware(since) < aware(made)
                    for i in selection
                    if i != planned.row.id
                )
                if not (behind or selection & used):
                    free.append((planned, selection))
                # a validation that waits makes anything after it that overlaps it wait: order is
                # kept; so the free ones are disjoint, and whether one gets its locks does not
                # change which others are free
                used |= selection
            # every free selection is locked at once: one statement a round on PostgreSQL
            locked = [True] * len(free) if locks is None else locks.try_lock_many([s for _, s in free])
            runs = {id(planned) for (planned, _), ok in zip(free, locked, strict=True) if ok}
            for planned, _ in selected:
                if id(planned) in runs:
                    taken.append(planned)
                else:
                    waiting.append(planned.batch)
        return taken, waiting, stale

    def _select(self, snapshot: InventoryView, ctx: EnvironmentContext, planned: _Planned) -> set[str]:
        """The validated instance's selection, with the sets a lone validation would use."""
        validated = planned.row.id
        together = ordered_with(snapshot, ctx, validated)

        def choose(record: InstanceRecord) -> AttributeSetName | None:
            state = ctx.lifecycle(ctx.binding(record.entity)).state(record.state)
            if record.id == validated or record.id in together:
                return state.validate_self  # ordered with it: validated together (module docstring)
            return state.validate_others

        view = snapshot.fork(attribute_set=choose)
        try:
            selected = run_selector(self.selector(ctx, view), [validated])
        except LsmError as exc:
            if caused_by_transient(exc):
                raise  # the database, not the selector: the work gives the round back
            planned.error = exc
            return {validated}
        records = view.get_many(i for ids in selected.values() for i in ids)
        planned.instances = {
            name: [
                instance_dict(records[i], records[i].attribute_set(choose(records[i]) or "active"))
                for i in ids
            ]
            for name, ids in selected.items()
        }
        planned.report["selected"] = {name: list(ids) for name, ids in selected.items()}
        # everything the selector read, not only what it kept: a validation that depends on an
        # instance (even one its compile leaves out) must not run beside that one's validation
        return view.read_ids() | {i for ids in selected.values() for i in ids} | {validated}

    def _everything(
        self, session: Session, ctx: EnvironmentContext, validated: InstanceRecord
    ) -> dict[str, list[InstanceDict]]:
        """Without partial compiles: every live instance, with the set its state names."""
        out: dict[str, list[InstanceDict]] = {}
        for binding in ctx.catalog:
            dicts = []
            for row in instance_reads.live_instances(session, ctx.env_id, binding.name):
                state = ctx.lifecycle(binding).state(row.state)
                name = state.validate_self if row.id == validated.id else state.validate_others
                if name is not None:
                    dicts.append(instance_dict(row, getattr(row, f"{name}_attributes")))
            out[binding.name] = dicts
        return out

    # -- one validation -----------------------------------------------------------------------------
    def _refine(self, ctx: EnvironmentContext, planned: _Planned, *, batch_size: int, round_: int) -> _Result:
        """Refine one validation's selection on its own; its outcome, not applied yet."""
        started = time.perf_counter()
        report = {**planned.report, "batch": {"size": batch_size, "round": round_}}
        success, message, allocations = True, "validation succeeded", {}
        try:
            if planned.error is not None:
                raise planned.error
            assert planned.instances is not None
            report.setdefault(
                "selected", {name: [d["id"] for d in dicts] for name, dicts in planned.instances.items()}
            )
            result = self.refiner(ctx, planned.instances, validation=True)
            report["resources"] = result.resource_count
            report["timings"] = {f"refine_{k}": v for k, v in result.timings.items()}
            allocations = result.allocations.get(planned.row.id, {})
        except LsmError as exc:  # the model, the selector, or the allocated values were refused
            if caused_by_transient(exc):
                raise  # the database, not the model: the work gives the round back (no rejection)
            success, message = False, f"validation failed: {exc.message}"
            report["error"] = {**exc.to_body(), "traceback": exc.details.get("traceback") or _traceback(exc)}
            report["error"].update(located(exc, list(ctx.model.files)))
        except Exception as exc:  # a bug in a model that escaped its own error handling
            if caused_by_transient(exc):
                raise
            success, message = False, f"validation failed: {type(exc).__name__}: {exc}"
            report["error"] = {"error": "internal", "message": str(exc), "traceback": _traceback(exc)}
            report["error"].update(located(exc, list(ctx.model.files)))
        except TimeLimitExceeded as exc:  # the model did not finish: its candidate is rejected
            limit = ctx.settings.compile_timeout
            success = False
            message = (
                f"validation failed: the model did not finish within {limit:g} s (setting compile_timeout)"
            )
            report["error"] = {"error": "compile_timeout", "message": message, "traceback": _traceback(exc)}
        report.setdefault("timings", {})["total"] = time.perf_counter() - started
        return _Result(planned, success, message, dict(allocations), report)

    def _apply(
        self,
        ctx: EnvironmentContext,
        results: list[_Result],
        *,
        more: Callable[[Session], list[Batch]] | None = None,
    ) -> list[Batch]:
        """Apply a round's outcomes and finish its requests; the requests ``more`` claimed in
        the same transaction (none when it is not given or the round was applied one by one).

        The outcomes of one round go through the orchestration in ONE transaction (their
        instances are disjoint: nothing one outcome does is seen by another), and the requests
        are finished in that same transaction: one wait for the write lock per round instead of
        two, and no crash can leave outcomes applied with their requests still running. When
        any outcome is refused (allocated values the entity does not accept), each is applied
        on its own instead, the refused candidates are rejected with the reason, and the
        requests are finished after them (a crash in between: a resumed request finds its
        instance moved on and ends as stale).
        """
        if not results:
            return []

        def finishes() -> list[tuple[Batch, str, dict[str, Any]]]:  # as the results stand now
            return [(r.planned.batch, "success" if r.success else "failed", r.report) for r in results]

        claimed: list[Batch] = []

        def then(session: Session) -> None:
            self.queue.finish_many(finishes(), session=session)
            if more is not None:
                claimed.extend(more(session))

        try:
            self.orchestrator.execute_many(ctx, [r.outcome() for r in results], then=then)
            return claimed
        except LsmError:
            for result in results:
                self._apply_one(ctx, result)  # may turn a success into a rejection
        self.queue.finish_many(finishes())
        return []  # the claim, if any, was rolled back with the round

    def _apply_one(self, ctx: EnvironmentContext, result: _Result) -> None:
        try:
            self.orchestrator.execute(ctx, result.outcome())
        except LsmError as exc:  # e.g. allocated values the entity refuses: the candidate is rejected
            if not result.success:
                raise
            result.report["error"] = {**exc.to_body(), "traceback": _traceback(exc)}
            result.success, result.message, result.allocations = (
                False,
                f"validation failed: {exc.message}",
                {},
            )
            self.orchestrator.execute(ctx, result.outcome())


@dataclass
class _Result:
    """A refined validation: its outcome, to be applied with the others of its round."""

    planned: _Planned
    success: bool
    message: str
    allocations: dict[str, Any]
    report: dict[str, Any]

    def outcome(self) -> ValidationOutcome:
        row, params = self.planned.row, self.planned.params
        return ValidationOutcome(
            instance_id=row.id,
            expected_version=row.version,
            compile_id=self.planned.batch.leader.id,
            success=self.success,
            message=self.message,
            trigger=params.trigger,
            target=params.target,
            allocations=dict(self.allocations),
            request_id=self.planned.batch.leader.request_id,
        )


def _traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))
