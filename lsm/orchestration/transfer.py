"""The ONE place that changes an instance's state.

Every transfer (create, on_update, on_delete, api_set_state, auto, validation outcome, resource
based, failed export, expert force) goes through ``Orchestrator.execute``, which in one database
transaction:

1. locks the instance row (``SELECT ... FOR UPDATE``; SQLite's write transaction is
   ``BEGIN IMMEDIATE``) and checks ``current_version`` (409 on mismatch);
2. checks attributes against their modifiers (422 naming the attribute) and identity
   uniqueness (409 naming the clash);
3. asks the lifecycle machine for the step, applies the attribute-set operation, bumps the
   version (and the desired-state version when the step changes the desired state);
4. writes the event-log line, and records the follow-up compile request (validation, or an
   exporting compile) in the same transaction; both carry the ``Origin`` (actor and request
   id) of the change.

The auto transfers of the new state then fire in order, each a step of its own (its own lock,
version, event line and compile request) but in the SAME transaction, as the ``system`` actor
with the request id of the change that caused them: a crash can not separate a step from its
automatic follow-up. (When a follow-up is refused, the change commits alone and the follow-ups
fire after it, each in its own transaction.) After the commit, listeners (the compile worker)
are told that requests are waiting. Nothing else in the code base writes
``InstanceRow.state`` (but ``lsm.orchestration.export_failed``, the bulk form of a failed export
that ``fail_exports`` runs, with the same checks).

The same steps may first be worked out on a read snapshot (``planning``: a group-commit item,
an ``execute_many`` of commands by id), keeping the version of every instance row read; the
write transaction then only checks that those versions did not move and writes what was worked
out, or, if one moved or the plan could not be made, runs the steps under the lock as above
(``lsm.orchestration.group``, "Worked out before the lock"). Every step bumps the version, so
the check is exact.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from lsm.catalog import Binding, identity_value, validate_create, validate_server_write, validate_update
from lsm.errors import (
    Conflict,
    IdentityConflict,
    InvalidAttributes,
    InvalidInput,
    LsmError,
    TransferNotAllowed,
    UnknownInstance,
    VersionConflict,
)
from lsm.inventory import repository as repo
from lsm.inventory.compile_requests import (
    COMPILE_TABLE,
    CompileOrder,
    ValidationParams,
    compile_values,
    insert_requests,
    notify_work,
)
from lsm.inventory.database import Database
from lsm.inventory.discovery_store import claim_adoption
from lsm.inventory.export_failures import Waiting
from lsm.inventory.tables import InstanceRow, utcnow
from lsm.lifecycle import (
    EXPORT_FAILED,
    AttributeSets,
    LifecycleMachine,
    Step,
    apply_operation,
    changes_desired_state,
)
from lsm.orchestration import expert
from lsm.orchestration.batch import ItemError, batch_error, check_size, positions
from lsm.orchestration.commands import (
    SYSTEM,
    Auto,
    Command,
    Create,
    Delete,
    ExportFailed,
    ForceAttributes,
    ForceDestroy,
    ForceState,
    Origin,
    ResourceOutcome,
    SetState,
    Update,
    ValidationOutcome,
)
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.export_failed import sort_waiting, write_simple
from lsm.orchestration.group import DEFAULT_MAX_BATCH, GroupCommit, NeedsLock, Planned, defer_insert
from lsm.orchestration.references import check_references, references_of
from lsm.schemas.compiles import CompileKind

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What one ``execute`` did: the instance after it, and whether compiles were requested."""

    instance: InstanceRow
    executed: bool = False
    compiles: list[str] = field(default_factory=list)
    #: who it was done for (a validation outcome learns its request id from the compile row)
    origin: Origin = SYSTEM


class Orchestrator:
    """Runs commands against one database.

    ``listeners`` hear of newly queued compiles (the compile processing); ``watchers`` of every
    committed change (the event stream and compile waiters of this process).
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.listeners: list[Callable[[str], None]] = []
        self.watchers: list[Callable[[str], None]] = []
        #: shared transactions for ``execute(grouped=True)`` (``enable_group_commit``)
        self.group: GroupCommit | None = None
        #: ``execute_many`` batches written as planned on a snapshot (for tests and benchmarks)
        self.planned_batches = 0

    def enable_group_commit(self, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        """Let ``execute(grouped=True)`` calls of concurrent threads share write transactions
        (``lsm.orchestration.group``); the API process turns it on for its requests."""
        if self.group is None:
            self.group = GroupCommit(
                self.db,
                item_errors=(LsmError, IntegrityError),
                max_batch=max_batch,
                versions=repo.instance_versions,
            )

    def close(self) -> None:
        """Stop the group-commit writer after answering what it holds (safe when never started)."""
        if self.group is not None:
            self.group.close()

    # -- the entry point ---------------------------------------------------------------------
    def execute(
        self,
        ctx: EnvironmentContext,
        command: Command,
        *,
        origin: Origin | None = None,
        grouped: bool = False,
        then: Callable[[Session, InstanceRow], None] | None = None,
    ) -> InstanceRow:
        """Apply ``command`` and the auto transfers that follow it, in one transaction.

        Each auto step is a step of its own (lock, version bump, event line, compile request)
        taken in the same transaction as the command, so that no crash can leave an instance in
        a state whose automatic transfer never fires (``_chain``); when an auto step is refused,
        the command is committed alone and the steps are fired after it, each in its own
        transaction, as they always were. ``origin`` says who asked (``None``: the engine
        itself, ``system``); the follow-up auto transfers are recorded as ``system`` with the
        same request id. ``grouped``: the transaction may be shared with concurrent callers'
        commands, each under its own savepoint (``lsm.orchestration.group``), when group commit
        is enabled; the answer is the same as alone, given once the shared transaction committed.
        ``then`` runs last in that transaction (or savepoint) with the instance as it stands (a
        create records its ``Idempotency-Key`` there: one commit makes both, or neither).
        """
        group = self.group if grouped else None
        outcome, chained = self._execute_once(ctx, command, origin or SYSTEM, group, then=then)
        return self._complete(ctx, outcome, chained, group)

    async def execute_async(
        self, ctx: EnvironmentContext, command: Command, *, origin: Origin | None = None
    ) -> InstanceRow:
        """``execute(..., grouped=True)`` for a caller on an event loop, with group commit on:
        the command joins a shared transaction and the caller awaits its commit on the loop,
        without a thread of its own (``GroupCommit.run_async``). The rare rest that blocks (an
        auto step refused in the chain, fired in transactions of its own) runs in a thread.
        """
        group = self.group
        if group is None:
            raise RuntimeError("execute_async needs group commit (Orchestrator.enable_group_commit())")
        origin = origin or SYSTEM
        with _identity_conflicts():
            outcome, chained = await group.run_async(
                self._work(ctx, command, origin, chain=True), plan=self._plan(ctx, command, origin)
            )
        if not chained:
            return await asyncio.to_thread(self._complete, ctx, outcome, chained, group)
        return self._complete(ctx, outcome, chained, group)

    def _complete(
        self, ctx: EnvironmentContext, outcome: Outcome, chained: bool, group: GroupCommit | None
    ) -> InstanceRow:
        """After a command's transaction: the auto steps a refusal left (each in a transaction
        of its own; only when not ``chained``), then the listeners and watchers are told."""
        row = outcome.instance
        queued = list(outcome.compiles)
        while outcome.executed and not chained:  # an auto step was refused in the chain: as before
            follow = self._auto_command(ctx, row)
            if follow is None:
                break
            outcome, _ = self._execute_once(ctx, follow, outcome.origin.follow_up(), group, chain=False)
            if outcome.executed:
                row = outcome.instance
            queued.extend(outcome.compiles)
        if queued:
            self.notify(ctx.env_id)
        self._changed(ctx.env_id)
        return row

    def execute_many(
        self,
        ctx: EnvironmentContext,
        commands: list[Command],
        *,
        origin: Origin | None = None,
        then: Callable[[Session], None] | None = None,
    ) -> list[InstanceRow]:
        """Apply every command in ONE transaction, all or nothing; the instances, in order.

        Every command is checked (a refused one does not stop the others from being checked),
        identity values are unique across the batch too (each create is flushed before the
        next one looks), and when any item is refused nothing is written and one error names
        every refused item (``lsm.orchestration.batch``). The auto transfers that follow run in
        the same transaction, in rounds (``_chain``); when one is refused, the batch is
        committed without them and they run afterwards, a transaction per round. ``then`` runs
        last in the same transaction (a validation round records its compiles' ends there).
        """
        check_size(commands)
        origin = origin or SYSTEM
        planned = self._plan_many(ctx, commands, origin)
        with _identity_conflicts("; nothing was written"):
            with self.db.write() as session:
                if planned is not None and planned.holds(session):
                    transaction, (rows, executed, follow_ups, chained) = planned.transaction, planned.steps
                    transaction.write_planned(session)
                    self.planned_batches += 1
                else:
                    transaction = _Transaction(session, ctx, origin)
                    rows, executed, follow_ups, chained = self._steps_many(transaction, commands, origin)
                    transaction.write_pending()
                if then is not None:
                    then(session)
        queued = bool(transaction.compiles)
        if not chained:  # an auto step was refused in the chain: the old rounds, after the commit
            queued |= self._auto_rounds(ctx, rows, executed, follow_ups)
        if queued:
            self.notify(ctx.env_id)
        self._changed(ctx.env_id)
        return rows

    def execute_in(
        self,
        session: Session,
        ctx: EnvironmentContext,
        commands: list[Command],
        *,
        origin: Origin | None = None,
    ) -> Callable[[], None]:
        """Apply commands that address instances by id (``ExportFailed``, ``ResourceOutcome``...)
        inside the caller's open write transaction, with the auto transfers that follow; what to
        run once that transaction committed (the steps a refused auto transfer left, and telling
        the listeners and watchers) is returned.

        Why: a failed exporting compile is recorded by the compile queue, and the instances
        that waited on it must move in the SAME transaction as that record (``lsm.compiler.
        export_failure``), so that no crash records one without the other. No size limit: a
        failed full compile moves every waiting instance, locked and written a chunk per
        statement (``_steps_many``).
        """
        origin = origin or SYSTEM
        transaction = _Transaction(session, ctx, origin)
        rows, executed, follow_ups, chained = self._steps_many(transaction, commands, origin)
        transaction.write_pending()
        queued = bool(transaction.compiles)

        def after_commit() -> None:
            more = queued
            if not chained:
                more |= self._auto_rounds(ctx, rows, executed, follow_ups)
            if more:
                self.notify(ctx.env_id)
            self._changed(ctx.env_id)

        return after_commit

    def fail_exports(
        self,
        session: Session,
        ctx: EnvironmentContext,
        waiting: Sequence[Waiting],
        *,
        compile_id: str,
        message: str,
        origin: Origin | None = None,
        lifecycles: Mapping[str, str] | None = None,
    ) -> Callable[[], None]:
        """``ExportFailed`` for every instance of ``waiting`` (the instances a failed exporting
        compile was to export, as read in ``session``), inside that open write transaction:
        in bulk where the lifecycle's ``export_failed`` transfer only changes the state, through
        ``execute_in`` otherwise (``lsm.orchestration.export_failed``). ``lifecycles``: entity ->
        lifecycle as persisted, when the model does not load. What to run once the transaction
        committed is returned."""
        origin = origin or SYSTEM
        found = sort_waiting(ctx, waiting, compile_id, message, lifecycles)
        written = write_simple(
            session, ctx, found.simple, compile_id=compile_id, message=message, origin=origin, now=utcnow()
        )
        rest = self.execute_in(session, ctx, list(found.commands), origin=origin) if found.commands else None

        def after_commit() -> None:
            if rest is not None:
                rest()
            elif written:
                self._changed(ctx.env_id)

        return after_commit

    def _steps_many(self, transaction: _Transaction, commands: list[Command], origin: Origin) -> _ManySteps:
        """Run every command in ``transaction`` and the auto transfers that follow (``_chain``);
        nothing is written yet. Refused items are collected and raised as one error
        (``batch_error``). The rows, which took a step, their follow-up origins, and whether the
        chain is complete."""
        transaction.deferred = True
        transaction.prefetch(_instance_ids(commands))
        failures: list[ItemError] = []
        outcomes: list[Outcome] = []
        created: dict[str, int] = {}
        for (op, index), command in zip(positions(commands), commands, strict=True):
            transaction.origin = origin  # a validation outcome adopts its compile's request id
            try:
                outcome = transaction.run(command)
            except LsmError as exc:
                ref = command.ref if isinstance(command, Update) else None
                failures.append(ItemError(op, index, _within_batch(exc, created), ref))
                continue
            outcomes.append(outcome)
            if op == "create":
                created[outcome.instance.id] = index
        if failures:
            raise batch_error(failures, len(commands))
        rows = [outcome.instance for outcome in outcomes]
        executed = [o.executed for o in outcomes]
        follow_ups = [o.origin.follow_up() for o in outcomes]
        return rows, executed, follow_ups, self._chain(transaction, rows, executed, follow_ups)

    def _plan_many(
        self, ctx: EnvironmentContext, commands: list[Command], origin: Origin
    ) -> _PlannedMany | None:
        """``execute_many`` of commands that address instances by id (validation outcomes,
        automatic transfers, deploy outcomes), worked out with their chain on a read snapshot
        before the write lock; None when it can not be (another kind of command, a refusal,
        anything that needs the lock), and the batch then runs under the lock as always.

        Why: on SQLite a validation round's apply held the write lock for its reads, checks
        and steps (longer than its own CPU time, as it competed for the GIL) while the API's
        group commit waited. Its transaction now only checks the rows' versions and writes.
        """
        if not all(isinstance(c, Auto | ValidationOutcome | ResourceOutcome) for c in commands):
            return None
        try:
            with self.db.read() as session:
                transaction = _Transaction(session, ctx, origin, planning=True)
                steps = self._steps_many(transaction, commands, origin)
        except (LsmError, NeedsLock) as exc:  # a refusal is decided, and reported, under the lock
            log.debug("batch of %d not planned (%s: %s)", len(commands), type(exc).__name__, exc)
            return None
        return _PlannedMany(transaction, steps)

    def _chain(
        self, transaction: _Transaction, rows: list[InstanceRow], executed: list[bool], origins: list[Origin]
    ) -> bool:
        """Fire the auto transfers that follow ``rows`` inside ``transaction``, in rounds (each
        row's steps with its own origin); ``rows`` are updated in place.

        Why in the same transaction: committed apart, a crash between the step and its automatic
        follow-up (a worker killed after applying a validation round's outcomes, before promoting
        them) left instances in a state whose auto transfer had fired for nobody, and the
        retried request found them moved on. The rounds run under a SAVEPOINT: when any step is
        refused (an ``LsmError``), the whole chain is undone and False is returned; the caller
        commits without it and fires the steps after its commit, as before.
        """
        ctx = transaction.ctx
        follow = self._follow(ctx, rows, executed)
        if not follow:
            return True
        if transaction.planning:  # nothing is written yet: a refused step abandons the plan
            while follow:
                executed = _round(transaction, follow, rows, origins)
                follow = self._follow(ctx, rows, executed)
            return True
        mark = transaction.mark()
        try:
            with transaction.session.begin_nested():
                while follow:
                    executed = _round(transaction, follow, rows, origins)
                    follow = self._follow(ctx, rows, executed)
                transaction.write_steps()
        except LsmError:
            log.warning("an automatic transfer was refused; firing them after the commit", exc_info=True)
            transaction.undo_to(mark)
            for row in rows:
                transaction.session.refresh(row)  # back from the undone steps to what the database holds
            return False
        return True

    def _follow(
        self, ctx: EnvironmentContext, rows: list[InstanceRow], executed: list[bool]
    ) -> list[tuple[int, Auto]]:
        """The auto transfers due after a round: (row index, command)."""
        return [
            (i, command)
            for i, row in enumerate(rows)
            if executed[i] and (command := self._auto_command(ctx, row)) is not None
        ]

    def _auto_rounds(
        self, ctx: EnvironmentContext, rows: list[InstanceRow], executed: list[bool], origins: list[Origin]
    ) -> bool:
        """Fire the auto transfers that follow ``rows`` (updated in place), a round per transaction;
        each row's steps carry its own origin (``origins``, one per row)."""
        queued = False
        while True:
            follow = self._follow(ctx, rows, executed)
            if not follow:
                return queued
            with self.db.write() as session:
                transaction = _Transaction(session, ctx, SYSTEM)
                transaction.deferred = True
                executed = _round(transaction, follow, rows, origins)
                transaction.write_pending()
                queued |= bool(transaction.compiles)

    def notify(self, env_id: str) -> None:
        """Tell the listeners (the compile worker) that compile requests of ``env_id`` wait."""
        for listener in self.listeners:
            try:
                listener(env_id)
            except Exception:  # a listener must never undo a committed transfer
                log.exception("compile listener failed")
        self._changed(env_id)

    def _changed(self, env_id: str) -> None:
        for watcher in self.watchers:
            try:
                watcher(env_id)
            except Exception:  # a watcher must never undo a committed transfer
                log.exception("change watcher failed")

    def _execute_once(
        self,
        ctx: EnvironmentContext,
        command: Command,
        origin: Origin,
        group: GroupCommit | None = None,
        *,
        chain: bool = True,
        then: Callable[[Session, InstanceRow], None] | None = None,
    ) -> tuple[Outcome, bool]:
        """Run ``command`` in a transaction of its own (or a group's savepoint), with the auto
        transfers that follow it when ``chain``; the outcome of the last step taken, and whether
        the chain is complete (no refused auto step left for the caller)."""
        work = self._work(ctx, command, origin, chain=chain, then=then)
        with _identity_conflicts():
            if group is not None:
                return group.run(work, plan=self._plan(ctx, command, origin) if chain else None)
            with self.db.write() as session:
                return work(session)

    def _work(
        self,
        ctx: EnvironmentContext,
        command: Command,
        origin: Origin,
        *,
        chain: bool,
        then: Callable[[Session, InstanceRow], None] | None = None,
    ) -> Callable[[Session], tuple[Outcome, bool]]:
        """The transaction's work for ``command`` (see ``_execute_once``), for any session."""

        def work(session: Session) -> tuple[Outcome, bool]:
            transaction = _Transaction(session, ctx, origin)
            # its rows are written once, after the chain (whose savepoint may drop some), and
            # in a group by the batch (``lsm.orchestration.group.defer_insert``)
            transaction.deferred = True
            result = self._steps(transaction, command, chain=chain)
            transaction.write_pending()
            if then is not None:
                then(session, result[0].instance)
            return result

        return work

    def _plan(
        self, ctx: EnvironmentContext, command: Command, origin: Origin
    ) -> Callable[[Session], Planned[tuple[Outcome, bool]]] | None:
        """``_work`` (with its chain) worked out on a read snapshot, for the group commit to
        write later under the lock if the rows it read are unchanged (``lsm.orchestration.group``,
        "Worked out before the lock"). Only the commands that change an existing instance are
        planned; a create reads what no version guards (identity, ids)."""
        if not isinstance(command, Update | SetState | Delete):
            return None

        def plan(session: Session) -> Planned[tuple[Outcome, bool]]:
            transaction = _Transaction(session, ctx, origin, planning=True)
            transaction.deferred = True
            result = self._steps(transaction, command, chain=True)

            def apply(write_session: Session) -> tuple[Outcome, bool]:
                transaction.write_planned(write_session)
                return result

            return Planned(dict(transaction.guards), apply)

        return plan

    def _steps(self, transaction: _Transaction, command: Command, *, chain: bool) -> tuple[Outcome, bool]:
        """Run ``command`` and, when ``chain``, its auto transfers (``_chain``); nothing is
        written yet. The outcome of the last step and whether the chain is complete."""
        outcome = transaction.run(command)
        if not chain:
            return outcome, True
        rows = [outcome.instance]
        complete = self._chain(transaction, rows, [outcome.executed], [outcome.origin.follow_up()])
        if not complete:
            return outcome, False
        return Outcome(rows[0], outcome.executed, transaction.compiles, outcome.origin), True

    def _auto_command(self, ctx: EnvironmentContext, row: InstanceRow) -> Auto | None:
        binding = ctx.binding(row.entity)
        transfer = ctx.machine(binding).auto_transfer(row.state)
        if transfer is None or transfer.validate or not auto_enabled(binding, row, transfer.config_name):
            return None
        return Auto(instance_id=row.id, expected_version=row.version)


@contextmanager
def _identity_conflicts(detail: str = "") -> Iterator[None]:
    """A write that broke the identity index raises ``IdentityConflict`` (409), its message
    ending in ``detail``; any other ``IntegrityError`` passes. The partial unique index on
    identity values is the last line of defence between two concurrent creates on PostgreSQL."""
    try:
        yield
    except IntegrityError as exc:
        if "identity" in str(exc.orig).lower():
            raise IdentityConflict(
                f"identity value already used by another instance (concurrent create){detail}"
            ) from None
        raise


def _round(
    transaction: _Transaction, follow: list[tuple[int, Auto]], rows: list[InstanceRow], origins: list[Origin]
) -> list[bool]:
    """One round of auto transfers in ``transaction`` (locked together first), each with its
    row's origin; ``rows`` are updated in place; which rows took a step."""
    executed = [False] * len(rows)
    transaction.prefetch(command.instance_id for _, command in follow)
    for i, command in follow:
        transaction.origin = origins[i]
        outcome = transaction.run(command)
        if outcome.executed:
            rows[i], executed[i] = outcome.instance, True
    return executed


def _instance_ids(commands: list[Command]) -> list[str]:
    """The instances that commands addressed by id (not by entity and reference) will lock."""
    return [
        c.instance_id
        for c in commands
        if isinstance(c, Auto | ValidationOutcome | ResourceOutcome | ExportFailed)
    ]


def _within_batch(error: LsmError, created: dict[str, int]) -> LsmError:
    """An identity clash with an instance created earlier in the same batch names that item."""
    if isinstance(error, IdentityConflict) and error.details.get("instance") in created:
        error.details["clashes_with"] = {"op": "create", "index": created[error.details["instance"]]}
    return error


def auto_enabled(binding: Binding, row: InstanceRow, config_name: str | None) -> bool:
    """A ``config_name`` switch: per instance, else per entity, else enabled."""
    if config_name is None:
        return True
    if config_name in (row.config or {}):
        return bool(row.config[config_name])
    return bool(binding.config.get(config_name, True))


#: what ``Orchestrator._steps_many`` gives: the rows, which took a step, their follow-up
#: origins, and whether the chain of auto transfers is complete
_ManySteps = tuple[list[InstanceRow], list[bool], list[Origin], bool]


@dataclass
class _PlannedMany:
    """An ``execute_many`` worked out on a snapshot: its transaction (steps, rows and requests
    pending, the versions it read) and what its steps gave."""

    transaction: _Transaction
    steps: _ManySteps

    def holds(self, session: Session) -> bool:
        """Under the write lock: every row the plan read is still at the version it read."""
        guards = self.transaction.guards
        current = repo.instance_versions(session, guards)
        return all(current.get(i) == v for i, v in guards.items())


class _Transaction:
    """One command inside one open write transaction."""

    def __init__(
        self, session: Session, ctx: EnvironmentContext, origin: Origin, *, planning: bool = False
    ) -> None:
        self.session = session
        self.ctx = ctx
        self.origin = origin
        #: worked out on a read snapshot, written later by ``write_planned`` (group commit): no
        #: row is locked or written, every instance read is a guard, anything else ``NeedsLock``
        self.planning = planning
        #: instance id -> the version it was read at (only while ``planning``)
        self.guards: dict[str, int] = {}
        #: environments whose workers are told at the write (``notify_work``, while ``planning``)
        self.notify_envs: set[str] = set()
        self.compiles: list[str] = []
        #: event lines and compile requests not inserted yet (``write_pending``); ``deferred``:
        #: a batch inserts them once, after its last command, instead of after each one
        self.pending_events: list[dict[str, Any]] = []
        self.pending_compiles: list[dict[str, Any]] = []
        #: lifecycle steps not written yet (``write_steps``): instance id -> its new columns
        self.pending_steps: dict[str, dict[str, Any]] = {}
        self.deferred = False
        #: instances locked ahead by ``prefetch``
        self.locked: dict[str, InstanceRow] = {}

    def prefetch(self, instance_ids: Iterable[str]) -> None:
        """Lock many instances in a few statements, ahead of commands that address them by id
        (a validation round's outcomes, the automatic transfers after them): one batched
        statement instead of one per command."""
        ids = [i for i in dict.fromkeys(instance_ids) if i not in self.locked]
        if not ids:
            return
        if self.planning:
            rows = repo.get_instances(self.session, self.ctx.env_id, ids)
        else:
            rows = repo.lock_instances_by_id(self.session, self.ctx.env_id, ids)
        for row in rows.values():
            self.saw(row)
        self.locked.update(rows)

    def lock_by_id(self, instance_id: str) -> InstanceRow:
        """The instance, locked (while planning: read): from ``prefetch`` when it was, else now."""
        if instance_id not in self.locked:
            if self.planning:  # read on the snapshot, not locked
                self.prefetch([instance_id])
            else:
                locked = repo.lock_instance_by_id(self.session, self.ctx.env_id, instance_id)
                self.locked[instance_id] = locked
        row = self.locked.get(instance_id)
        if row is None:  # the snapshot has no such instance (the locked read raises the same)
            raise UnknownInstance(f"no instance {instance_id!r}", instance=instance_id)
        return row

    def saw(self, row: InstanceRow) -> None:
        """While planning: ``row`` was read at its version (the first read counts)."""
        if self.planning:
            self.guards.setdefault(row.id, row.version)

    def write_planned(self, session: Session) -> None:
        """Write what was worked out while ``planning``, in ``session`` (the group's write
        transaction, once the guards held): the steps, event lines, compile requests, and the
        notifications of the workers."""
        self.session, self.planning = session, False
        for env_id in sorted(self.notify_envs):
            notify_work(session, env_id)
        self.write_pending()

    def run(self, command: Command) -> Outcome:
        outcome = self.dispatch(command)
        outcome.origin = self.origin
        if not self.deferred:
            self.write_pending()
        return outcome

    def mark(self) -> tuple[int, int, int]:
        """Where this transaction's pending rows and queued ids stand (``undo_to`` returns there).

        The steps taken so far are written first: a savepoint opened after the mark and rolled
        back refreshes its rows from the database, which must hold what preceded it."""
        self.write_steps()
        return len(self.pending_events), len(self.pending_compiles), len(self.compiles)

    def undo_to(self, mark: tuple[int, int, int]) -> None:
        """Forget what was queued since ``mark`` (a rolled-back savepoint's steps, rows and
        requests; every step pending now was taken after the mark)."""
        events, compiles, ids = mark
        self.pending_steps.clear()
        del self.pending_events[events:]
        del self.pending_compiles[compiles:]
        del self.compiles[ids:]

    def write_pending(self) -> None:
        """Insert the event lines and compile requests of the commands run so far: as values,
        one ``executemany`` per table (``lsm.inventory.row_values`` says why not ORM objects);
        in a group-commit item, the batch inserts them with its other items' rows."""
        self.write_steps()
        compiles, events = self.pending_compiles, self.pending_events
        self.pending_compiles, self.pending_events = [], []
        if compiles and not defer_insert(self.session, COMPILE_TABLE, compiles):
            insert_requests(self.session, compiles)
        if events and not defer_insert(self.session, repo.EVENT_TABLE, events):
            repo.insert_events(self.session, events)

    def take_step(self, row: InstanceRow, values: dict[str, Any]) -> None:
        """``row`` takes a lifecycle step's new ``values`` now; they are written by the next
        ``write_steps`` (one ``executemany`` for the steps taken since the last one)."""
        repo.take_step(row, values)
        self.pending_steps.setdefault(row.id, {}).update(values)  # a second step adds to the first

    def write_steps(self) -> None:
        """Write the steps taken since the last call. Called before anything that reads the
        instance rows back from the database (a savepoint that may roll back and refresh them,
        a create's flush) and by ``write_pending``: as the ORM's flush was, before."""
        if self.planning:
            raise NeedsLock("the steps would be written now")
        steps, self.pending_steps = self.pending_steps, {}
        repo.write_steps(self.session, steps)

    def add_event(self, row: InstanceRow, **fields: Any) -> None:
        """An event line of ``row``, with who asked (inserted by ``write_pending``)."""
        self.pending_events.append(repo.event_values(row, **self.who(), **fields))

    def dispatch(self, command: Command) -> Outcome:
        match command:
            case Create():
                return self.create(command)
            case Update():
                return self.update(command)
            case Delete():
                row = self.lock(command.entity, command.ref, command.current_version)
                step = self.machine(row).step(row.state, "on_delete")
                return self.transition(row, step, "on_delete")
            case SetState():
                return self.set_state(command)
            case Auto():
                return self.auto(command)
            case ValidationOutcome():
                return self.validation_outcome(command)
            case ResourceOutcome():
                return self.resource_outcome(command)
            case ExportFailed():
                return self.export_failed(command)
            case ForceState():
                return self.force_state(command)
            case ForceAttributes():
                return expert.force_attributes(self, command)
            case ForceDestroy():
                return expert.force_destroy(self, command)
        raise TypeError(f"unknown command {command!r}")

    # -- commands ------------------------------------------------------------------------------
    def create(self, command: Create) -> Outcome:
        binding = self.ctx.binding(command.entity)
        attributes = validate_create(binding.entity, command.attributes)
        state = self.ctx.machine(binding).initial_state(command.initial_state)
        instance_id = self.new_instance_id(command.instance_id)
        identity = identity_value(attributes, binding.identity)
        if identity is not None:
            clash = repo.identity_taken(self.session, self.ctx.env_id, binding.name, identity)
            if clash is not None:
                raise IdentityConflict(
                    f"{binding.name} with {binding.identity}={identity!r} already exists: {clash.id}",
                    entity=binding.name,
                    attribute=binding.identity,
                    value=identity,
                    instance=clash.id,
                )
        check_references(self.session, self.ctx, binding, attributes)
        if command.adopts is not None:
            claim_adoption(
                self.session,
                self.ctx.env_id,
                command.adopts,
                instance_id=instance_id,
                entity=binding.name,
                now=utcnow(),
            )
        owner_id = str(attributes[binding.relation_to_owner]) if binding.relation_to_owner else None
        row = InstanceRow(
            id=instance_id,
            env_id=self.ctx.env_id,
            entity=binding.name,
            state=state,
            version=1,
            candidate_attributes=attributes,
            identity=identity,
            owner_id=owner_id,
        )
        self.write_steps()  # the flush wrote every changed instance of the transaction: so do we
        self.session.add(row)
        self.session.flush()
        lifecycle = self.ctx.lifecycle(binding)
        if lifecycle.state(state).export_resources:
            row.desired_state_version = 1
            self.request_export(row, f"created in exporting state {state}")
        # a new id: nothing refers from it yet, so the index is not read
        repo.replace_references(
            self.session, self.ctx.env_id, row.id, references_of(binding, row), current=set()
        )
        trigger, message = ("create", "created")
        if command.adopts is not None:
            trigger, message = ("adopt", f"adopted discovered resource {command.adopts}")
        self.add_event(row, source=None, target=state, trigger=trigger, message=message)
        self.after_entering(row)
        return Outcome(row, executed=True, compiles=self.compiles)

    def update(self, command: Update) -> Outcome:
        row = self.lock(command.entity, command.ref, command.current_version)
        binding = self.ctx.binding(row.entity)
        step = self.machine(row).step(row.state, "on_update")
        base = row.candidate_attributes if row.candidate_attributes is not None else row.active_attributes
        candidate = validate_update(binding.entity, dict(base or {}), command.attributes)
        check_references(
            self.session, self.ctx, binding, candidate, changed=set(command.attributes), seen=self.saw
        )
        sets = AttributeSets(
            candidate=candidate, active=row.active_attributes, rollback=row.rollback_attributes
        )
        return self.transition(row, step, "on_update", sets=sets, message="attributes updated")

    def set_state(self, command: SetState) -> Outcome:
        row = self.lock(command.entity, command.ref, command.current_version)
        step = self.machine(row).step(row.state, "api_set_state", target=command.target_state)
        if step.transfer.validate:
            self.request_validation(row, trigger="api_set_state", target=command.target_state)
            return Outcome(row, executed=False, compiles=self.compiles)
        return self.transition(row, step, "api_set_state", message=command.message)

    def auto(self, command: Auto) -> Outcome:
        row = self.lock_by_id(command.instance_id)
        if row.version != command.expected_version:
            return Outcome(row)  # something else moved it on first: that change wins
        binding = self.ctx.binding(row.entity)
        transfer = self.machine(row).auto_transfer(row.state)
        if transfer is None or transfer.validate or not auto_enabled(binding, row, transfer.config_name):
            return Outcome(row)
        step = self.machine(row).step(row.state, "auto")
        return self.transition(row, step, "auto")

    def validation_outcome(self, command: ValidationOutcome) -> Outcome:
        if self.origin.request_id is None and command.request_id is not None:
            self.origin = Origin(self.origin.actor, command.request_id)  # the compile's cause
        row = self.lock_by_id(command.instance_id)
        if row.version != command.expected_version:
            return Outcome(row)  # validated attributes are stale; a newer request follows
        binding = self.ctx.binding(row.entity)
        step = self.machine(row).step(
            row.state, command.trigger, target=command.target, success=command.success
        )
        sets = None
        if command.success and command.allocations:
            current = row.candidate_attributes if row.candidate_attributes is not None else {}
            candidate = validate_server_write(binding.entity, dict(current), command.allocations)
            sets = AttributeSets(
                candidate=candidate, active=row.active_attributes, rollback=row.rollback_attributes
            )
        message = command.message or ("validation succeeded" if command.success else "validation failed")
        return self.transition(
            row, step, "validate", sets=sets, message=message, compile_id=command.compile_id
        )

    def resource_outcome(self, command: ResourceOutcome) -> Outcome:
        row = self.lock_by_id(command.instance_id)
        if row.desired_state_version != command.desired_state_version or row.deleted:
            return Outcome(row)  # a deploy of an older desired state says nothing of this one
        step = self.machine(row).step(row.state, "resource_based", success=command.success)
        message = command.message or ("resources deployed" if command.success else "resource deploy failed")
        return self.transition(row, step, "resource_based", message=message)

    def export_failed(self, command: ExportFailed) -> Outcome:
        """The lifecycle's ``export_failed`` transfer; in a state without one, an error line only
        (the instance waited on the export all the same: its log must say why nothing came)."""
        row = self.lock_by_id(command.instance_id)
        if row.desired_state_version != command.desired_state_version or row.deleted:
            return Outcome(row)  # moved on since: that export said nothing of its desired state
        machine = self.machine(row)
        if not machine.has_export_failed(row.state):
            self.add_event(
                row,
                source=row.state,
                target=row.state,
                trigger=EXPORT_FAILED,
                message=command.message,
                compile_id=command.compile_id,
                is_error=True,
            )
            return Outcome(row, executed=False, compiles=self.compiles)
        step = machine.step(row.state, EXPORT_FAILED, success=False)
        return self.transition(
            row, step, EXPORT_FAILED, message=command.message, compile_id=command.compile_id
        )

    def force_state(self, command: ForceState) -> Outcome:
        reason = None if command.reason is None else expert.begin(self, command.reason)
        row = self.lock(command.entity, command.ref, command.current_version)
        lifecycle = self.ctx.lifecycle(self.ctx.binding(row.entity))
        if not lifecycle.has_state(command.target_state):
            raise InvalidInput(
                f"{command.target_state!r} is not a state of lifecycle {lifecycle.name!r}",
                field="state",
                target_state=command.target_state,
                known=[s.name for s in lifecycle.states],
            )
        sets = AttributeSets(row.candidate_attributes, row.active_attributes, row.rollback_attributes)
        if command.operation:
            sets = apply_operation(command.operation, sets)
        changes = changes_desired_state(lifecycle, row.state, command.target_state, command.operation)
        message = command.message
        if reason is not None:
            expert.record(self, row, "state", reason, state=row.state, target_state=command.target_state)
            message = f"{message}: {reason}" if message else reason
        self.apply(row, row.state, command.target_state, sets, changes, expert.TRIGGER, message, None, False)
        return Outcome(row, executed=True, compiles=self.compiles)

    # -- shared steps ------------------------------------------------------------------------------
    def lock(self, entity: str, ref: str, current_version: int) -> InstanceRow:
        binding = self.ctx.binding(entity)
        row = repo.find_instance(
            self.session,
            self.ctx.env_id,
            binding.name,
            ref,
            identity_attr=binding.identity,
            for_update=not self.planning,
        )
        self.saw(row)
        if row.version != current_version:
            raise VersionConflict(
                f"{binding.name} {row.id} is at version {row.version}, not {current_version}",
                instance=row.id,
                current_version=row.version,
                given_version=current_version,
            )
        if row.deleted:
            raise TransferNotAllowed(
                f"{binding.name} {row.id} is deleted (state {row.state})",
                instance=row.id,
                state=row.state,
                allowed=[],
            )
        return row

    def who(self) -> dict[str, str | None]:
        """The ``actor`` and ``request_id`` columns of the rows this transaction writes."""
        return {"actor": self.origin.actor, "request_id": self.origin.request_id}

    def machine(self, row: InstanceRow) -> LifecycleMachine:
        return self.ctx.machine(self.ctx.binding(row.entity))

    def transition(
        self,
        row: InstanceRow,
        step: Step,
        trigger: str,
        *,
        sets: AttributeSets | None = None,
        message: str = "",
        compile_id: str | None = None,
    ) -> Outcome:
        """Apply a lifecycle step: operation, version bump, event, follow-up compile requests."""
        current = AttributeSets(row.candidate_attributes, row.active_attributes, row.rollback_attributes)
        new_sets = sets if sets is not None else current
        if step.is_noop and new_sets == current:
            if step.is_error:  # a failure with nowhere to go is still worth a line in the log
                self.add_event(
                    row,
                    source=row.state,
                    target=row.state,
                    trigger=trigger,
                    message=message,
                    compile_id=compile_id,
                    is_error=True,
                )
            return Outcome(row, executed=False, compiles=self.compiles)
        if step.operation is not None:
            new_sets = apply_operation(step.operation, new_sets)
        self.apply(
            row,
            step.source,
            step.destination,
            new_sets,
            step.changes_desired_state,
            trigger,
            message,
            compile_id,
            step.is_error,
        )
        return Outcome(row, executed=True, compiles=self.compiles)

    def apply(
        self,
        row: InstanceRow,
        source: str,
        destination: str,
        sets: AttributeSets,
        changes_desired_state: bool,
        trigger: str,
        message: str,
        compile_id: str | None,
        is_error: bool,
    ) -> None:
        binding = self.ctx.binding(row.entity)
        lifecycle = self.ctx.lifecycle(binding)
        # the relation index follows the union of the three sets; a step that only moves values
        # between sets (promote, rollback) or changes no relation leaves it as it is
        refs_before = references_of(binding, row)
        values: dict[str, Any] = {
            "state": destination,
            "version": row.version + 1,
            "desired_state_version": row.desired_state_version + (1 if changes_desired_state else 0),
            "deleted": row.deleted or lifecycle.state(destination).deleted,
            "last_updated": utcnow(),
        }
        if not (
            sets.candidate is row.candidate_attributes
            and sets.active is row.active_attributes
            and sets.rollback is row.rollback_attributes
        ):  # the step moved an attribute set: its JSON is written too
            values["candidate_attributes"] = sets.candidate
            values["active_attributes"] = sets.active
            values["rollback_attributes"] = sets.rollback
        self.take_step(row, values)
        if changes_desired_state:
            self.request_export(row, f"{binding.name} {row.id}: {source} -> {destination}")
        refs = references_of(binding, row)
        if refs != refs_before:
            if self.planning:  # reads and writes the relation index, which no version guards
                raise NeedsLock("the relation index changes")
            repo.replace_references(self.session, self.ctx.env_id, row.id, refs)
        self.add_event(
            row,
            source=source,
            target=destination,
            trigger=trigger,
            message=message,
            compile_id=compile_id,
            is_error=is_error,
        )
        self.after_entering(row)

    def after_entering(self, row: InstanceRow) -> None:
        """A state whose auto transfer validates asks for its validation compile right away."""
        binding = self.ctx.binding(row.entity)
        transfer = self.ctx.machine(binding).auto_transfer(row.state)
        if transfer is not None and transfer.validate and auto_enabled(binding, row, transfer.config_name):
            self.request_validation(row, trigger="auto", target=None)

    def request_validation(self, row: InstanceRow, *, trigger: str, target: str | None) -> None:
        order = CompileOrder(
            env_id=self.ctx.env_id,
            kind=CompileKind.VALIDATION,
            instance_id=row.id,
            requested_ids=[row.id],
            reason=f"validate {row.entity} {row.id} in {row.state}",
            actor=self.origin.actor,
            request_id=self.origin.request_id,
            validation=ValidationParams(
                instance_version=row.version,
                trigger="api_set_state" if trigger == "api_set_state" else "auto",
                target=target,
            ),
        )
        self.enqueue(order)

    def request_export(self, row: InstanceRow, reason: str) -> None:
        partial = self.ctx.settings.partial_compiles
        order = CompileOrder(
            env_id=self.ctx.env_id,
            kind=CompileKind.PARTIAL if partial else CompileKind.FULL,
            requested_ids=[row.id] if partial else [],
            reason=reason,
            actor=self.origin.actor,
            request_id=self.origin.request_id,
        )
        self.enqueue(order)

    def enqueue(self, order: CompileOrder) -> None:
        """Queue a compile request in this transaction (inserted by ``write_pending``)."""
        values = compile_values(order)
        self.pending_compiles.append(values)
        self.compiles.append(values["id"])
        if self.planning:
            self.notify_envs.add(order.env_id)
        else:
            notify_work(self.session, order.env_id)

    def new_instance_id(self, requested: str | None) -> str:
        if requested is None:
            return str(uuid.uuid4())
        try:
            instance_id = str(uuid.UUID(requested))
        except (ValueError, AttributeError, TypeError):
            raise InvalidAttributes([{"path": "service_instance_id", "reason": "must be a UUID"}]) from None
        if self.session.get(InstanceRow, instance_id) is not None:
            raise Conflict(f"instance id {instance_id} is already used", instance=instance_id)
        return instance_id
