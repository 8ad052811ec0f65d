"""``AgentService``: deploy agents as a source of work for the service loop.

Why a work source and not a loop of its own: the service loop (``lsm.services.loop``) already
claims leased work on runner threads, renews leases on its heartbeat and wakes on ``NOTIFY``;
an agent is one more kind of work (DESIGN: one loop for workers, agents and the scheduler).
This class satisfies ``lsm.services.loop.WorkSource`` structurally; it never imports
``lsm.services`` (a higher layer).

* **Names and leases.** Each resource names its agent; an agent name of an environment is held
  by one process at a time through the lease ``agent:<env_id>:<agent>``, renewed by the loop's
  keepalive. A process takes free names that have open work, up to a fair share
  (``ceil(names / live agent processes)``, counted by the presence leases
  ``agent-process:<owner>``), and gives back names above its share, so several ``lsm agent``
  processes on PostgreSQL share the names. Which free names a process prefers is its own
  (ordered by a hash of owner and name, so processes spread over the names), but the leases
  are always taken in name order, the global lock order (docs/architecture.md). A name whose
  holder died (kill -9) is taken over once its lease expires, or at once when the holder was a
  process of this host that is gone; on taking a name, the rows its dead holders left
  ``deploying`` go back to ``pending`` (``lsm.deploy.recovery``).
* **Claims.** ``claim`` plans the environments with a new desired-state version
  (``lsm.deploy.planner``), then claims a batch of READY resources of held names in one
  transaction (``lsm.inventory.deploy_state.claim``); blocked ones are marked ``skipped``.
  Names of a halted environment and paused names are left out, and asked again in the claim's
  transaction (``lsm.inventory.halts``): a halt or pause stops new claims at once.
* **Runs.** A batch is one ``DeployWork``: its resources run concurrently on the agent's handler
  threads (each under its metaparameters: ``lsm.deploy.executor``), each bounded by the
  ``deploy_timeout`` (a handler past it is given up on and its thread replaced:
  ``lsm.deploy.handler_threads``); the batch's results are written in ONE transaction (retried
  when PostgreSQL failed it for a deadlock), with a note that their lifecycle feedback is due;
  then the feedback fires the transfers of the instances whose resources reached a final
  outcome and the note is deleted. A batch that fails gives back exactly its own claims.
* **Recovery.** On its first claim and on every keepalive the process takes back claims of
  dead holders and its own claims older than the lease that no batch runs, and finishes the
  feedback a crash interrupted (``lsm.deploy.recovery``): nothing waits for the periodic repair.
* **Fault hook.** ``LSM_FAULT_KILL_AFTER_RESULTS=1`` in the environment makes the process kill
  itself (SIGKILL) right after its first batch's results are committed, before their feedback:
  for the tests of that crash, never for production.
* **Discovery.** A discovery resource deploys like any other; what its handler found is stored
  with ``lsm.discovery.record_discovery`` in that same transaction (each in a savepoint), so a
  crash never keeps a result without its findings or the reverse. Findings that can not be
  stored fail that resource's try only. It runs again on its ``poll`` interval and on repair.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session, col

from lsm.deploy.executor import Executor, RunSettings
from lsm.deploy.feedback import Feedback
from lsm.deploy.handler_threads import HandlerThreads
from lsm.deploy.jail import Jail
from lsm.deploy.metaparams import Semaphores
from lsm.deploy.planner import Planner
from lsm.deploy.recovery import PROCESS_PREFIX, Recovery
from lsm.deploy.registry import HandlerRegistry
from lsm.discovery.results import record_discovery
from lsm.inventory import deploy_claims, deploy_feedback, deploy_queries, deploy_state, halts
from lsm.inventory import leases as lease_sql
from lsm.inventory.database import Database
from lsm.inventory.deploy_plan import affected_sets
from lsm.inventory.deploy_state import Claimed, Result
from lsm.inventory.tables import LeaseRow, utcnow
from lsm.model.loader import Model
from lsm.orchestration import EnvironmentContext, Orchestrator

log = logging.getLogger(__name__)

FINAL = ("deployed", "failed", "skipped")
#: the fault hook (module docstring): kill this process right after a batch's results commit
KILL_AFTER_RESULTS = "LSM_FAULT_KILL_AFTER_RESULTS"


def lease_name(env_id: str, agent: str) -> str:
    return f"agent:{env_id}:{agent}"


Name = tuple[str, str]  # (env_id, agent)


class DeployWork:
    """One claimed batch of one environment: run its resources, write their results, feed back."""

    def __init__(
        self,
        service: AgentService,
        env_id: str,
        claimed: list[Claimed],
        skipped: list[str],
        records: dict[str, tuple[str, str]],
        skipped_sets: set[str],
        noop: bool | None = None,
    ) -> None:
        self.service = service
        self.env_id = env_id
        self.claimed = claimed
        self.skipped = skipped
        self.records = records
        self.skipped_sets = skipped_sets
        #: ``deploy_noop`` as committed when the batch was claimed (None: never set)
        self.noop = noop
        self.label = f"deploy of {len(claimed)} resource(s) of environment {env_id}"

    def deadline(self) -> float | None:
        return None  # each resource is bounded by deploy_timeout; the batch waits for no more

    def expire(self) -> None:
        pass

    def run(self) -> None:
        service = self.service
        try:
            results = service.execute(self.env_id, self.claimed, self.records, noop=self.noop)
            results, pending = deploy_claims.retry_conflicts(
                partial(self.write, results), f"result write of environment {self.env_id}"
            )
            if service.kill_after_results:
                os.kill(os.getpid(), signal.SIGKILL)
            final = [r for r in results if r.status in FINAL]
            sets = {r.set_name for r in final} | self.skipped_sets
            changed = {r.resource_id for r in final} | set(self.skipped)
            service.recovery.run(pending, self.env_id, sets, changed)
        except Exception:
            log.exception(
                "deploy batch of environment %s failed; its resources go back to pending", self.env_id
            )
            try:
                service.give_back(self.env_id, [c.resource_id for c in self.claimed])
            except Exception:
                log.exception("could not give back the batch (the keepalive takes it back)")
        finally:
            service.done(self)

    def write(self, results: list[Result]) -> tuple[list[Result], int | None]:
        """The batch's one result transaction: lock its rows (global order), store discoveries,
        write the results, and note that their lifecycle feedback is due. Safe to repeat whole."""
        service = self.service
        with service.db.write() as session:
            conn = session.connection()
            now = service.clock()
            locked = deploy_state.lock_results(conn, self.env_id, service.owner, results)
            results = self.record_discoveries(session, results, locked.mine)
            deploy_state.write_results(conn, self.env_id, service.owner, now, results, locked)
            final = [r for r in results if r.status in FINAL]
            pending = deploy_feedback.record_pending(
                conn,
                self.env_id,
                service.owner,
                {r.set_name for r in final} | self.skipped_sets,
                {r.resource_id for r in final} | set(self.skipped),
                now,
            )
        return results, pending

    def record_discoveries(
        self, session: Session, results: list[Result], mine: frozenset[str]
    ) -> list[Result]:
        """Store the findings of the batch's successful discovery runs in ``session`` (the
        transaction that then writes the results), each in a savepoint: one that can not be
        stored turns into that resource's failed try and leaves its previous results intact,
        without touching the other resources of the batch. Runs whose rows are no longer
        claimed by this agent (taken over, released) store nothing."""
        found = [r for r in results if r.discovered is not None]
        if not found:
            return results
        service = self.service
        items = {c.resource_id: c for c in self.claimed}
        now = service.clock()
        out = []
        for result in results:
            if result.discovered is not None and result.resource_id in mine:
                try:
                    with session.begin_nested():
                        record_discovery(
                            session, self.env_id, result.resource_id, result.agent, result.discovered, now=now
                        )
                except Exception as exc:
                    log.warning("discovery results of %s not stored: %s", result.resource_id, exc)
                    item = items[result.resource_id]
                    result = service.executor.refused(result, item, self.records.get(result.resource_id), exc)
            out.append(result)
        return out


class AgentService:
    """Deploy agents of this process (``lsm agent``, or embedded in ``lsm server``)."""

    name = "deploy"

    def __init__(
        self,
        db: Database,
        orchestrator: Orchestrator,
        contexts: Callable[[str], EnvironmentContext],
        *,
        owner: str,
        info: dict[str, Any] | None = None,
        agents: Sequence[str] | None = None,
        noop: bool = False,
        sema: int | None = None,
        threads: int = 8,
        batch: int = 200,
        lease_ttl: float = 30.0,
        state_dir: Path,
        deploy_timeout: float | None = None,
        jail: Jail | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.contexts = contexts
        self.owner = owner
        self.info = dict(info or {})
        self.agents = set(agents) if agents else None
        self.noop = noop
        self.batch = max(1, batch)
        self.lease_ttl = lease_ttl
        self.state_dir = state_dir
        self.jail = jail
        self.deploy_timeout = deploy_timeout
        self.clock = clock
        self.feedback = Feedback(db, orchestrator, contexts)
        self.planner = Planner(db, self.feedback, owner=owner)
        self.recovery = Recovery(db, self.feedback, owner=owner, lease_ttl=lease_ttl)
        self.kill_after_results = os.environ.get(KILL_AFTER_RESULTS) == "1"
        self.executor = Executor(Semaphores(sema), clock)
        self.handlers = HandlerThreads(threads)
        self.held: set[Name] = set()
        self._inflight: dict[Name, int] = defaultdict(int)
        self._running: set[DeployWork] = set()
        self._recovered = False
        self._other_until: dict[Name, float] = {}
        self._registries: dict[str, tuple[Model, HandlerRegistry]] = {}
        self._lock = threading.Lock()
        self._turn = 0
        self._stopped = False
        #: called when work may be waiting (the loop's ``wake``); set by the composition root
        self.wake: Callable[[str | None], None] = _no_wake

    # -- WorkSource --------------------------------------------------------------------------------
    def claim(self) -> DeployWork | None:
        if self._stopped:
            return None
        if not self._recovered:  # a process starts by finishing what a dead one left
            self._recovered = True
            self.recover()
        for env_id in self.planner.due():
            try:
                self.planner.plan(env_id)
            except Exception:
                log.exception("environment %s: the deploy plan failed", env_id)
        with self.db.read() as session:
            names = deploy_state.open_names(session.connection(), self.clock())
            names = halts.runnable(session.connection(), names)  # not halted, not paused
        if self.agents is not None:
            names = {n for n in names if n[1] in self.agents}
        if not names:
            return None
        self._take(names)
        with self._lock:
            mine = sorted(n for n in names if n in self.held)
        by_env: dict[str, list[str]] = defaultdict(list)
        for env_id, agent in mine:
            by_env[env_id].append(agent)
        envs = sorted(by_env)
        if not envs:
            return None
        with self._lock:
            self._turn = (self._turn + 1) % len(envs)
            start = self._turn
        for offset in range(len(envs)):
            env_id = envs[(start + offset) % len(envs)]
            work = self._claim_in(env_id, by_env[env_id])
            if work is not None:
                return work
        return None

    def heartbeat(self, running: Sequence[Any]) -> None:
        """Leases are renewed by ``keepalive`` (names are held whether or not a batch runs)."""

    def release(self, running: Sequence[Any]) -> None:
        """Shutdown with batches still running: their rows go back to ``pending`` for another agent."""
        for work in sorted(running, key=lambda w: getattr(w, "env_id", "")):
            if isinstance(work, DeployWork):
                self.give_back(work.env_id, [c.resource_id for c in work.claimed])

    def give_back(self, env_id: str, resource_ids: list[str]) -> int:
        """Give back exactly these claims of this process (its own, in the global lock order, in
        a transaction of its own that is retried on a conflict): other batches of the same names
        run on."""

        def transaction() -> int:
            with self.db.write() as session:
                return deploy_claims.release_claims(session.connection(), env_id, self.owner, resource_ids)

        return deploy_claims.retry_conflicts(transaction, f"give-back of a batch of environment {env_id}")

    def recover(self) -> None:
        """The recovery pass (``lsm.deploy.recovery``); its failure is logged, never fatal."""
        with self._lock:
            running = {c.resource_id for work in self._running for c in work.claimed}
        try:
            self.recovery.sweep(self.clock(), running)
        except Exception:
            log.exception("agent %s: the recovery pass failed (tried again at the keepalive)", self.owner)

    # -- leases ----------------------------------------------------------------------------------------
    def _claim_in(self, env_id: str, agents: list[str]) -> DeployWork | None:
        now = self.clock()
        with self.db.write() as session:
            conn = session.connection()
            agents = halts.free_agents(conn, env_id, agents)  # a halt or pause since the look above
            if not agents:
                return None
            claimed, skipped = deploy_state.claim(conn, env_id, agents, self.owner, now, self.batch)
            if not claimed and not skipped:
                return None
            records = deploy_state.desired_records(conn, env_id, [c.resource_id for c in claimed])
            skipped_sets = affected_sets(conn, env_id, skipped) if skipped else set()
            noop = deploy_queries.committed_noop(conn, env_id)  # not the cached settings' value
        work = DeployWork(self, env_id, claimed, skipped, records, skipped_sets, noop)
        with self._lock:
            for c in claimed:
                self._inflight[(env_id, c.agent)] += 1
            self._running.add(work)
        return work

    def done(self, work: DeployWork) -> None:
        with self._lock:
            self._running.discard(work)
            for c in work.claimed:
                name = (work.env_id, c.agent)
                self._inflight[name] -= 1
                if self._inflight[name] <= 0:
                    del self._inflight[name]
        self.wake(work.env_id)  # dependants may be ready now

    def _processes(self, session: Any, now: datetime) -> int:
        count = session.execute(
            select(func.count())
            .select_from(LeaseRow)
            .where(col(LeaseRow.name).startswith(PROCESS_PREFIX), col(LeaseRow.expires_at) > now)
        ).scalar_one()
        return max(1, int(count))

    def _preference(self, name: Name) -> str:
        """This process's own order of preference among free names: processes that look at the
        same names at once try different ones first, so they spread instead of all contending
        for the first (what a shuffle did), while the leases are still taken in name order."""
        return hashlib.blake2b(f"{self.owner}|{name[0]}|{name[1]}".encode(), digest_size=8).hexdigest()

    def _take(self, names: set[Name]) -> None:
        """Take free names with open work, up to this process's fair share. The presence lease,
        then the names in name order (the global lock order), then the take-back of the rows
        their dead holders left: leases before resource-state rows."""
        mono = time.monotonic()
        with self._lock:
            unheld = [n for n in names if n not in self.held and self._other_until.get(n, 0.0) <= mono]
        if not unheld:
            return
        now = self.clock()
        taken: list[Name] = []
        with self.db.write() as session:
            lease_sql.acquire(
                session, PROCESS_PREFIX + self.owner, self.owner, now=now, ttl=self.lease_ttl, info=self.info
            )
            share = math.ceil(len(names) / self._processes(session, now))
            with self._lock:
                room = share - len([n for n in self.held if n in names])
            if room <= 0:
                return
            wanted = sorted(sorted(unheld, key=self._preference)[:room])
            for name in wanted:
                row = lease_sql.acquire(
                    session, lease_name(*name), self.owner, now=now, ttl=self.lease_ttl, info=self.info
                )
                if row.owner != self.owner and lease_sql.process_gone(dict(row.info or {})):
                    row = lease_sql.acquire(
                        session,
                        lease_name(*name),
                        self.owner,
                        now=now,
                        ttl=self.lease_ttl,
                        info=self.info,
                        steal=True,
                    )
                if row.owner != self.owner:
                    self._other_until[name] = mono + min(2.0, self.lease_ttl / 3)
                    continue
                taken.append(name)
        with self._lock:
            self.held.update(taken)
        by_env: dict[str, list[str]] = defaultdict(list)
        for env_id, agent in taken:
            by_env[env_id].append(agent)
        for env_id in sorted(by_env):
            # a name taken (over): whatever its dead holders left deploying goes back to pending
            try:
                self.recovery.take_back_names(env_id, by_env[env_id], now)
            except Exception:
                log.exception("environment %s: claims of dead holders not taken back yet", env_id)
        if taken:  # and the feedback they left undone
            self.recover()

    def keepalive(self) -> None:
        """Renew this process's presence and its names; give back names it no longer needs."""
        if self._stopped:
            return
        now = self.clock()
        self.recover()
        self.repair(now)
        with self.db.read() as session:
            names = deploy_state.open_names(session.connection(), now)
        with self.db.write() as session:
            lease_sql.acquire(
                session, PROCESS_PREFIX + self.owner, self.owner, now=now, ttl=self.lease_ttl, info=self.info
            )
            processes = self._processes(session, now)
            share = math.ceil(max(1, len(names)) / processes)
            with self._lock:
                held = sorted(self.held)
                busy = set(self._inflight)
            mine_open = [n for n in held if n in names]
            extra = max(0, len(mine_open) - share)
            for name in held:
                # alone, a process keeps its idle names (taking a name back costs a lease write
                # on the next change); with others, it gives them back for them to take
                idle = processes > 1 and name not in names and name not in busy
                surplus = extra > 0 and name in names and name not in busy
                if idle or surplus:
                    lease_sql.release(session, lease_name(*name), self.owner)
                    with self._lock:
                        self.held.discard(name)
                    if surplus:
                        extra -= 1
                        self._other_until[name] = time.monotonic() + self.lease_ttl
                    continue
                if not lease_sql.renew(session, lease_name(*name), self.owner, now=now, ttl=self.lease_ttl):
                    with self._lock:
                        self.held.discard(name)

    def repair(self, now: datetime) -> int:
        """Periodic repair (setting ``deploy_repair_interval``): every deployed resource of an
        environment is re-read and its drift fixed, once per interval whichever agent fires it."""
        with self.db.read() as session:
            envs = deploy_state.planned_environments(session.connection())
        scheduled = 0
        for env_id in envs:
            try:
                interval = self.contexts(env_id).settings.deploy_repair_interval
                with self.db.write() as session:
                    scheduled += deploy_state.repair_if_due(session, env_id, now, interval)
            except Exception:
                log.exception("environment %s: the repair could not be scheduled", env_id)
        if scheduled:
            self.wake(None)
        return scheduled

    def stop(self) -> None:
        """Give back every name and the presence lease, then this process's claims; no new claims."""
        self._stopped = True
        try:
            with self.db.write() as session:
                lease_sql.release(session, PROCESS_PREFIX + self.owner, self.owner)
                for name in sorted(self.held):
                    lease_sql.release(session, lease_name(*name), self.owner)
                by_env: dict[str, list[str]] = defaultdict(list)
                for env_id, agent in sorted(self.held):
                    by_env[env_id].append(agent)
                for env_id in sorted(by_env):
                    conn = session.connection()
                    deploy_claims.release_names(conn, env_id, by_env[env_id], owner=self.owner)
        except Exception:
            log.exception("agent %s: could not give back its names", self.owner)
        self.held.clear()
        self.handlers.shutdown()

    # -- running -----------------------------------------------------------------------------------------
    def registry(self, env_id: str) -> tuple[HandlerRegistry, EnvironmentContext]:
        ctx = self.contexts(env_id)
        with self._lock:
            cached = self._registries.get(env_id)
            if cached is None or cached[0] is not ctx.model:
                cached = (ctx.model, HandlerRegistry(ctx.model.handlers))
                self._registries[env_id] = cached
        return cached[1], ctx

    def settings(self, ctx: EnvironmentContext, noop: bool | None = None) -> RunSettings:
        """How a batch runs; ``noop``: ``deploy_noop`` as committed when it was claimed (None:
        never set, so the configured default in ``ctx.settings`` applies)."""
        settings = ctx.settings
        return RunSettings(
            state_dir=self.state_dir,
            jail=self.jail,
            noop=self.noop or (settings.deploy_noop if noop is None else noop),
            timeout=self.deploy_timeout if self.deploy_timeout is not None else settings.deploy_timeout,
        )

    def execute(
        self,
        env_id: str,
        claimed: list[Claimed],
        records: dict[str, tuple[str, str]],
        *,
        noop: bool | None = None,
    ) -> list[Result]:
        """Run every claimed resource concurrently on the handler threads; one result each
        (``noop``: the committed ``deploy_noop`` of the claim, see ``settings``)."""
        if not claimed:
            return []
        registry, ctx = self.registry(env_id)
        run = self.settings(ctx, noop)
        started: dict[str, float] = {}

        def one(item: Claimed) -> Result:
            started[item.resource_id] = time.monotonic()
            return self.executor.run(registry, item, records.get(item.resource_id), run)

        futures: dict[Future[Result], Claimed] = {
            self.handlers.submit(partial(one, item)): item for item in claimed
        }
        results: list[Result] = []
        waiting = set(futures)
        while waiting:
            done, waiting = wait(waiting, timeout=min(0.5, run.timeout), return_when=FIRST_COMPLETED)
            for future in done:
                item = futures[future]
                try:
                    results.append(future.result())
                except Exception as exc:  # the executor records handler errors; this is a bug of ours
                    log.exception("deploy of %s failed outside its handler", item.resource_id)
                    results.append(_crash(self, item, run, exc))
            now = time.monotonic()
            for future in list(waiting):
                item = futures[future]
                began = started.get(item.resource_id)
                if began is not None and now - began > run.timeout:
                    waiting.discard(future)
                    self.handlers.abandon(future)  # its thread is replaced: the rest go on
                    results.append(self.executor.timed_out(item, run, began, records.get(item.resource_id)))
        return results


def _no_wake(_topic: str | None = None) -> None:
    pass


def _crash(service: AgentService, item: Claimed, run: RunSettings, exc: BaseException) -> Result:
    result = service.executor.timed_out(item, run, time.monotonic())
    if result.action is not None:
        result.action["messages"][-1]["message"] = f"{type(exc).__name__}: {exc}"
    result.last_error = f"{type(exc).__name__}: {exc}"
    return result


__all__ = ["KILL_AFTER_RESULTS", "AgentService", "DeployWork", "lease_name"]
