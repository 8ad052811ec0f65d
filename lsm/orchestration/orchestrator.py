"""``Orchestrator``: the ONE way an instance's state changes: decide, then commit.

Every transfer (create, on_update, on_delete, api_set_state, auto, validation outcome, resource
based, failed export, expert force) is first decided (``lsm.orchestration.decide``: the command
and what it read give the steps, event lines, compile requests and the row versions relied on)
and then written by one commit (``lsm.orchestration.commit``) that checks those versions in the
write transaction. The entry points differ only in where the decision is taken and whose
transaction the commit joins:

* ``execute``: one command, in a transaction of its own or (``grouped``) in the API's group
  commit (``lsm.orchestration.group``), where an update, set-state or delete is decided on a
  read snapshot before the write lock and the group checks its versions with the batch's;
* ``execute_async``: the same for a caller on an event loop;
* ``execute_many``: a batch, all or nothing (the bulk route, a validation round's outcomes, a
  deploy's outcomes: ``lsm.orchestration.deploy_outcomes``); a batch of outcomes is decided on a
  snapshot first;
* ``execute_in`` / ``fail_exports``: inside the caller's open write transaction (a failed
  export is recorded by the compile queue with the moves it causes).

A decision whose rows moved before its commit (decided on a snapshot; or, on PostgreSQL,
another transaction committed between the read and the commit's lock) is taken again in the
write transaction, with the rows locked: a moved ``current_version`` is then a 409, an outcome
that no longer applies takes no step. The auto transfers of the new state are decided with the
command (``lsm.orchestration.chain``), as the ``system`` actor with the request id of the change
that caused them, and committed with it. After the commit, listeners (the compile worker) are
told that requests wait, and watchers that something changed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from lsm.errors import LsmError
from lsm.orchestration.batch import check_size
from lsm.orchestration.chain import auto_command, follow_ups, run_round
from lsm.orchestration.commands import (
    SYSTEM,
    Auto,
    Command,
    Delete,
    Origin,
    ResourceOutcome,
    SetState,
    Update,
    ValidationOutcome,
)
from lsm.orchestration.commit import commit, decide_and_commit, identity_conflicts, write
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.decide import Decider
from lsm.orchestration.decide_batch import Decided, decide_many, decide_one
from lsm.orchestration.decision import Outcome
from lsm.orchestration.export_failed import sort_waiting, write_simple
from lsm.orchestration.group import DEFAULT_MAX_BATCH, GroupCommit, Planned
from lsm.store.compiles.export_failures import Waiting
from lsm.store.database import Database
from lsm.store.instances import repository as repo
from lsm.store.tables import InstanceRow, utcnow

log = logging.getLogger(__name__)


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
        #: ``execute_many`` batches committed as decided on a snapshot (for tests and benchmarks)
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

    # -- one command -------------------------------------------------------------------------
    def execute(
        self,
        ctx: EnvironmentContext,
        command: Command,
        *,
        origin: Origin | None = None,
        grouped: bool = False,
        then: Callable[[Session, InstanceRow], None] | None = None,
    ) -> InstanceRow:
        """Decide ``command`` and the auto transfers that follow it, and commit them together.

        ``origin`` says who asked (``None``: the engine itself, ``system``). ``grouped``: the
        transaction may be shared with concurrent callers' commands, each under its own
        savepoint (``lsm.orchestration.group``), when group commit is enabled; the answer is
        the same as alone, given once the shared transaction committed. ``then`` runs last in
        that transaction (or savepoint) with the instance as it stands (a create records its
        ``Idempotency-Key`` there: one commit makes both, or neither).
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
            raise RuntimeError("execute_async needs group commit (Orchestrator.enable_group_commit)")
        origin = origin or SYSTEM
        with identity_conflicts():
            outcome, chained = await group.run_async(
                self._work(ctx, command, origin, chain=True), plan=self._ahead(ctx, command, origin)
            )
        if not chained:
            return await asyncio.to_thread(self._complete, ctx, outcome, chained, group)
        return self._complete(ctx, outcome, chained, group)

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
        """Decide and commit ``command`` in a transaction of its own (or a group's savepoint),
        with the auto transfers that follow it when ``chain``; the outcome of the last step
        taken, and whether the chain is complete (no refused auto step left for the caller)."""
        work = self._work(ctx, command, origin, chain=chain, then=then)
        with identity_conflicts():
            if group is not None:
                ahead = self._ahead(ctx, command, origin) if chain and then is None else None
                return group.run(work, plan=ahead)
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
        """Decide and commit ``command`` in a write transaction (see ``_execute_once``)."""

        def work(session: Session) -> tuple[Outcome, bool]:
            _, result = decide_and_commit(session, ctx, origin, lambda d: decide_one(d, command, chain=chain))
            if then is not None:
                then(session, result[0].instance)
            return result

        return work

    def _ahead(
        self, ctx: EnvironmentContext, command: Command, origin: Origin
    ) -> Callable[[Session], Planned[tuple[Outcome, bool]]] | None:
        """``command`` (with its chain) decided on a read snapshot, for the group commit to
        write under the lock if the rows it read are unchanged (``lsm.orchestration.group``).
        Only the commands that change an existing instance are decided ahead; a create reads
        what no version guards (identity values, ids)."""
        if not isinstance(command, Update | SetState | Delete):
            return None

        def plan(session: Session) -> Planned[tuple[Outcome, bool]]:
            decider = Decider(session, ctx, origin)
            result = decide_one(decider, command)
            decision = decider.decision

            def apply(write_session: Session) -> tuple[Outcome, bool]:
                write(write_session, decision)
                return result

            return Planned(dict(decision.guards), apply)

        return plan

    def _complete(
        self, ctx: EnvironmentContext, outcome: Outcome, chained: bool, group: GroupCommit | None
    ) -> InstanceRow:
        """After a command's commit: the auto steps a refusal left (each in a transaction of
        its own; only when not ``chained``), then the listeners and watchers are told."""
        row = outcome.instance
        queued = list(outcome.compiles)
        while outcome.executed and not chained:  # an auto step was refused in the chain
            follow = auto_command(ctx, row)
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

    # -- many commands -----------------------------------------------------------------------
    def execute_many(
        self,
        ctx: EnvironmentContext,
        commands: list[Command],
        *,
        origin: Origin | None = None,
        then: Callable[[Session], None] | None = None,
    ) -> list[InstanceRow]:
        """Decide every command and commit them in ONE transaction, all or nothing; the
        instances, in order.

        Every command is checked (a refused one does not stop the others from being checked),
        identity values are unique across the batch too, and when any item is refused nothing
        is written and one error names every refused item (``lsm.orchestration.batch``). The
        auto transfers that follow are committed with the batch; when one is refused, the batch
        is committed without them and they run afterwards, a transaction per round. ``then``
        runs last in the same transaction (a validation round records its compiles' ends there).
        """
        check_size(commands)
        origin = origin or SYSTEM
        ahead = self._decide_ahead(ctx, commands, origin)
        with identity_conflicts("; nothing was written"):
            with self.db.write() as session:
                if ahead is not None and commit(session, ahead[0].decision):
                    decider, decided = ahead
                    self.planned_batches += 1
                else:
                    decider, decided = decide_and_commit(
                        session, ctx, origin, lambda d: decide_many(d, commands, origin)
                    )
                if then is not None:
                    then(session)
        queued = bool(decider.decision.compile_ids)
        if not decided.chained:  # an auto step was refused in the chain: rounds after the commit
            queued |= self._auto_rounds(ctx, decided)
        if queued:
            self.notify(ctx.env_id)
        self._changed(ctx.env_id)
        return decided.rows

    def _decide_ahead(
        self, ctx: EnvironmentContext, commands: list[Command], origin: Origin
    ) -> tuple[Decider, Decided] | None:
        """A batch of commands that address instances by id (validation outcomes, automatic
        transfers, deploy outcomes), decided with its chain on a read snapshot before the write
        lock; None for another kind of command or a refusal (decided, and reported, in the
        write transaction). Why: on SQLite the write lock bounds everyone's writes; a batch
        decided ahead holds it only to check its versions and write."""
        if not all(isinstance(c, Auto | ValidationOutcome | ResourceOutcome) for c in commands):
            return None
        try:
            with self.db.read() as session:
                decider = Decider(session, ctx, origin)
                return decider, decide_many(decider, commands, origin)
        except LsmError as exc:
            log.debug("batch of %d not decided ahead (%s: %s)", len(commands), type(exc).__name__, exc)
            return None

    def execute_in(
        self,
        session: Session,
        ctx: EnvironmentContext,
        commands: list[Command],
        *,
        origin: Origin | None = None,
    ) -> Callable[[], None]:
        """Decide and commit commands that address instances by id (``ExportFailed``,
        ``ResourceOutcome``...) inside the caller's open write transaction, with the auto
        transfers that follow; what to run once that transaction committed (the steps a refused
        auto transfer left, and telling the listeners and watchers) is returned.

        Why: the instances that waited on a failed exporting compile move in the SAME
        transaction as the compile queue's record of it (``lsm.compiler.export_failure``).
        No size limit: a failed full compile moves every waiting instance.
        """
        origin = origin or SYSTEM
        decider, decided = decide_and_commit(session, ctx, origin, lambda d: decide_many(d, commands, origin))
        queued = bool(decider.decision.compile_ids)

        def after_commit() -> None:
            more = queued
            if not decided.chained:
                more |= self._auto_rounds(ctx, decided)
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

    # -- shared ------------------------------------------------------------------------------
    def _auto_rounds(self, ctx: EnvironmentContext, decided: Decided) -> bool:
        """Fire the auto transfers that follow ``decided.rows`` (updated in place), a round per
        transaction; each row's steps carry its own origin. Whether compiles were queued."""
        rows, executed, origins = decided.rows, decided.executed, decided.follow_ups
        queued = False
        while follow := follow_ups(ctx, rows, executed):

            def one_round(
                d: Decider, follow: list[tuple[int, Auto]] = follow
            ) -> tuple[list[InstanceRow], list[bool]]:
                moved = list(rows)
                return moved, run_round(d, follow, moved, origins)

            with self.db.write() as session:
                decider, (moved, executed) = decide_and_commit(session, ctx, SYSTEM, one_round)
            rows[:] = moved
            queued |= bool(decider.decision.compile_ids)
        return queued

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
