"""``CompileQueue``: which requests run together, claimed under leases, finished with a report.

Why rows: a compile request is committed in the same transaction as the state change that
caused it (``lsm.orchestration``), so a crash can lose neither. The SQL is in
``lsm.store.compiles.queue``; this module is the policy.

Two queues in one table, so that neither kind waits behind the other:

* **Exporting** requests (full, partial) of an environment run one batch at a time: the caller
  holds the environment's compile lock (``EnvironmentLocks``). A claim takes the oldest queued
  request and what may run with it: a full compile absorbs every pending exporting request (it
  covers them all); with ``batched_partial_compiles`` every pending partial request merges into
  one compile over the union of their ids. Merged requests point to the leader
  (``merged_into``) and end with its status and version. An exporting request still
  ``running`` when the lock is taken belongs to a worker that died, or to a live one whose lock
  connection was cut: it is taken over once its lease expired, or at once when its process is
  known to be gone (same host); a live holder's batch is waited for, not run twice.
* **Validation** requests are claimed many at a time, oldest first, ``SKIP LOCKED`` on
  PostgreSQL so that several workers share them; ``lsm.compiler.validation`` runs those whose
  selections do not overlap as one compile. A validation whose lease expired (its worker died
  or hung) is taken over.

Nothing is claimed for a halted environment (``lsm.store.environments.halts``): each claim reads the halt
by key in its own transaction, so its requests stay queued, in order, until the resume.

Every claim writes a lease (``lease_owner``, a token per claim, and ``lease_expires``) that the
worker renews while it runs, and counts ``attempts``: a request whose worker died
``max_attempts`` times is failed with a report that says so instead of killing the next one.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session

from lsm.schemas.compiles import CompileKind, CompileStatus
from lsm.store import metric_counters
from lsm.store.batches import aware
from lsm.store.compiles import queue as sql
from lsm.store.database import Database
from lsm.store.environments import halts
from lsm.store.tables import CompileRow, utcnow

log = logging.getLogger(__name__)

#: what the queue calls in the transaction that records an exporting request as failed (its
#: batch and report); it returns what to run once that transaction committed
#: (``lsm.compiler.export_failure.ExportFailures.record``)
ExportFailedHook = Callable[[Session, "Batch", dict[str, Any]], Callable[[], None] | None]


class LeaseLost(Exception):
    """The worker no longer holds the request it was running (it hung past its lease, and the
    request was taken over or failed): its result must not be written."""


@dataclass
class Batch:
    """A claimed leader and the requests merged into it, held under one lease token."""

    leader: CompileRow
    merged: list[CompileRow] = field(default_factory=list)
    owner: str = ""

    @property
    def rows(self) -> list[CompileRow]:
        return [self.leader, *self.merged]

    @property
    def ids(self) -> list[str]:
        return [row.id for row in self.rows]

    @property
    def kind(self) -> CompileKind:
        return CompileKind(self.leader.kind)

    def requested_ids(self) -> list[str]:
        return list(dict.fromkeys(i for row in self.rows for i in row.requested_ids))

    def service_entities(self) -> list[str]:
        return list(dict.fromkeys(e for row in self.rows for e in row.service_entities))

    def exclude(self) -> set[str]:
        """Ids excluded by every request of the batch (one request's exclusion can't hide another's id)."""
        sets = [set(row.exclude) for row in self.rows]
        return set.intersection(*sets) if sets else set()


class CompileQueue:
    def __init__(self, db: Database, *, lease_ttl: float = 30.0, max_attempts: int = 3) -> None:
        self.db = db
        self.lease_ttl = lease_ttl
        self.max_attempts = max_attempts
        #: told of every failed exporting request (set by the wiring; see ``ExportFailedHook``)
        self.export_failed: ExportFailedHook | None = None

    def new_owner(self, worker: str) -> str:
        """A lease token for one claim: the worker's name and a nonce (see ``LeaseLost``)."""
        return f"{worker}/{uuid.uuid4().hex[:12]}"

    def environments_with_work(self) -> list[sql.Pending]:
        with self.db.read() as session:
            return sql.environments_with_work(session)

    # -- claiming -------------------------------------------------------------------------------
    def claim_exporting(
        self, env_id: str, owner: str, *, batched: bool, backoff: float = 0.0
    ) -> Batch | None:
        """The next exporting batch of ``env_id`` (call with the environment's compile lock held)."""
        now = utcnow()
        after: list[Callable[[], None]] = []
        with self.db.write() as session:
            batch = self._claim_exporting(session, env_id, owner, batched, backoff, now, after)
        for step in after:  # the failures of what was taken over are committed: their follow-ups
            step()
        return batch

    def _claim_exporting(
        self,
        session: Session,
        env_id: str,
        owner: str,
        batched: bool,
        backoff: float,
        now: datetime,
        after: list[Callable[[], None]],
    ) -> Batch | None:
        """``claim_exporting`` in its transaction; the after-commit steps of failed take-overs
        go to ``after``."""
        if halts.is_halted(session.connection(), env_id):
            return None  # it waits for the resume (checked in the claim's own transaction)
        state = sql.exporting_state(session, env_id, every=batched)
        if state.running:
            gone = [(r.id, r.attempts) for r in state.running if r.gone(now)]
            if len(gone) < len(state.running):
                # a live worker still runs one (it lost its lock connection, not its lease): the
                # environment's exports stay one batch at a time, so wait for it to finish
                return None
            self._take_over(session, gone, now, after)
            # what was taken over is queued again (or failed): read what is queued now
            state = sql.exporting_state(session, env_id, every=batched)
        if not state.queued:
            return None
        leader = state.queued[0]
        if _too_recent(leader.created_at, now, backoff):
            return None  # exporting requests wait out the back-off to gather more
        full = leader if leader.kind is CompileKind.FULL else state.first_full
        if full is not None:
            leader = full
            queued = state.queued if batched else sql.exporting_state(session, env_id, every=True).queued
            ids = [q.id for q in queued]
        elif batched:
            ids = [q.id for q in state.queued]
        else:
            ids = [leader.id]
        rows = sql.claim(session, ids, owner=owner, expires=self._expiry(now), now=now, leader=leader.id)
        return Batch(leader=rows[leader.id], merged=[rows[i] for i in ids if i != leader.id], owner=owner)

    def claim_validations(
        self, env_id: str, owner: str, *, limit: int, session: Session | None = None
    ) -> list[Batch]:
        """Up to ``limit`` validation requests of ``env_id``, oldest first, each its own batch
        (in ``session`` when given: a validation round claims the next in its own transaction)."""
        if session is None:
            with self.db.write() as own:
                return self.claim_validations(env_id, owner, limit=limit, session=own)
        if halts.is_halted(session.connection(), env_id):
            return []  # also stops a running validation work from claiming more in its rounds
        now = utcnow()
        expired = sql.expired(session, now, skip_locked=not self.db.is_sqlite)
        if expired:
            self._take_over(session, expired, now)
        ids = sql.queued_validations(session, env_id, limit=limit, skip_locked=not self.db.is_sqlite)
        if not ids:
            return []
        rows = sql.claim(session, ids, owner=owner, expires=self._expiry(now), now=now)
        return [Batch(leader=rows[i], owner=owner) for i in ids]

    def _take_over(
        self,
        session: Session,
        held: list[tuple[str, int]],
        now: datetime,
        after: list[Callable[[], None]] | None = None,
    ) -> None:
        """Requests whose worker died: back to the queue, or failed once they killed too many
        (an exporting one is written on its instances: ``export_failed``, whose after-commit
        steps go to ``after``)."""
        sql.lock_in_order(session, [i for i, _ in held])
        dead = [i for i, attempts in held if attempts >= self.max_attempts]
        sql.release(session, [i for i, attempts in held if attempts < self.max_attempts])
        for row_id, kind, env_id in sql.kinds(session, dead):
            report = {
                "error": {
                    "error": "worker_died",
                    "message": f"the worker running this compile stopped {self.max_attempts} times "
                    "before it finished (killed, or crashed by the model); it is not tried again",
                }
            }
            failed = sql.finish(
                session,
                row_id,
                owner=None,
                status=CompileStatus.FAILED,
                now=now,
                report=report,
                desired_state_version=None,
            )
            if failed:
                metric_counters.count_compile(
                    session.connection(), env_id, kind, CompileStatus.FAILED.value, None
                )
            if failed and kind != CompileKind.VALIDATION.value:
                row = session.get(CompileRow, row_id)
                if row is not None:
                    step = self._export_failed(session, Batch(leader=row), report)
                    if step is not None and after is not None:
                        after.append(step)

    # -- while running ---------------------------------------------------------------------------
    def renew(self, batches: list[Batch]) -> list[Batch]:
        """Extend the leases of ``batches`` (one statement per lease token); returns those whose
        lease was lost."""
        if not batches:
            return []
        by_owner: dict[str, list[Batch]] = {}
        for batch in batches:
            by_owner.setdefault(batch.owner, []).append(batch)
        expires = self._expiry(utcnow())
        held: set[str] = set()
        with self.db.write() as session:
            sql.lock_in_order(session, [i for batch in batches for i in batch.ids])
            for owner, owned in sorted(by_owner.items()):
                held |= sql.renew(session, owner, [i for b in owned for i in b.ids], expires)
        return [batch for batch in batches if batch.leader.id not in held]

    def release(self, batches: list[Batch]) -> None:
        """Give claimed requests back (a graceful shutdown): another worker runs them."""
        with self.db.write() as session:
            for batch in batches:
                sql.release(session, batch.ids, owner=batch.owner)

    def finish(
        self,
        batch: Batch,
        *,
        status: str | CompileStatus,
        report: dict[str, Any],
        desired_state_version: int | None = None,
        session: Session | None = None,
    ) -> Callable[[], None] | None:
        """Record the outcome on every request of the batch (in ``session`` when given).

        A failed exporting batch is written on the instances that waited on it in the same
        transaction (``export_failed``): what to run once ``session`` committed is returned
        (without ``session``, it is run here after the commit).

        Raises ``LeaseLost`` (and so rolls back ``session``) when the batch's lease is no
        longer this worker's.
        """
        if session is None:
            with self.db.write() as own:
                after = self.finish(
                    batch,
                    status=status,
                    report=report,
                    desired_state_version=desired_state_version,
                    session=own,
                )
            if after is not None:
                after()
            return None
        now = utcnow()
        status = CompileStatus(status)
        body = {**report, "worker": worker_of(batch.owner)} if batch.owner else report
        if batch.merged:  # a leader and its followers: their rows in the one order (lock_in_order)
            sql.lock_in_order(session, batch.ids)
        done = sql.finish(
            session,
            batch.leader.id,
            owner=batch.owner or None,
            status=status,
            now=now,
            report=body,
            desired_state_version=desired_state_version,
        )
        if not done:
            raise LeaseLost(f"compile {batch.leader.id} is no longer held by {batch.owner}")
        # the merged requests all get the same short report: one statement for all of them
        sql.finish_followers(
            session,
            [row.id for row in batch.merged],
            owner=batch.owner or None,
            status=status,
            now=now,
            report={"merged_into": batch.leader.id, "status": status.value},
            desired_state_version=desired_state_version,
        )
        # the compile that ran (not the requests merged into it), counted with its outcome
        metric_counters.count_compile(
            session.connection(), batch.leader.env_id, batch.kind.value, status.value, report.get("timings")
        )
        if status is CompileStatus.FAILED and batch.kind is not CompileKind.VALIDATION:
            return self._export_failed(session, batch, body)
        return None

    def _export_failed(
        self, session: Session, batch: Batch, report: dict[str, Any]
    ) -> Callable[[], None] | None:
        """Tell the hook of a failed exporting batch, under a savepoint: whatever goes wrong in
        it, the failure itself is still recorded (and the hook's error logged)."""
        if self.export_failed is None:
            return None
        try:
            with session.begin_nested():
                return self.export_failed(session, batch, report)
        except Exception:
            log.exception("compile %s: its failure could not be written on its instances", batch.leader.id)
            return None

    def finish_many(
        self, outcomes: list[tuple[Batch, str, dict[str, Any]]], *, session: Session | None = None
    ) -> None:
        """Finish many batches in one transaction (a round of validations; in ``session`` when
        given); a batch whose lease was lost is skipped, the others are recorded.

        The common case (every lease still held, no merged requests) is one ``executemany``;
        otherwise, or when a lease was lost, request by request under savepoints.
        """
        if session is None:
            with self.db.write() as own:
                self.finish_many(outcomes, session=own)
            return
        if all(batch.owner and not batch.merged for batch, _, _ in outcomes):
            finishes = [
                sql.Finish(
                    batch.leader.id,
                    batch.owner,
                    CompileStatus(status),
                    {**report, "worker": worker_of(batch.owner)},
                )
                for batch, status, report in outcomes
            ]
            try:
                with session.begin_nested():
                    if not sql.finish_fenced(session, finishes, now=utcnow()):
                        raise LeaseLost("a lease of the round was lost")
                    metric_counters.count_compiles(  # counted with what they count
                        session.connection(),
                        (
                            (b.leader.env_id, b.kind.value, CompileStatus(st).value, r.get("timings"))
                            for b, st, r in outcomes
                        ),
                    )
                return
            except LeaseLost:
                pass  # rolled back: find out which, one by one
        sql.lock_in_order(session, [i for batch, _, _ in outcomes for i in batch.ids])
        for batch, status, report in outcomes:
            try:
                with session.begin_nested():
                    self.finish(batch, status=status, report=report, session=session)
            except LeaseLost:
                continue

    def _expiry(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.lease_ttl)


def worker_of(owner: str) -> str:
    """The worker part of a lease token (``worker/nonce``): which process ran a compile."""
    return owner.rsplit("/", 1)[0]


def _too_recent(created_at: datetime, now: datetime, backoff: float) -> bool:
    return backoff > 0 and aware(created_at) > now - timedelta(seconds=backoff)
