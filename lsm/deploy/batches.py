"""A claimed batch: run its resources on the handler threads, write their results, hand on the feedback.

Why one transaction per batch: the batch's results are written together (retried when
PostgreSQL failed the transaction for a deadlock), with a note that their lifecycle feedback is
due (``lsm_deploy_feedback``); then the feedback (``lsm.deploy.feedback``) fires the transfers of
the instances whose resources reached a final outcome and the note is deleted. A crash between
the two leaves the note to the recovery pass. A batch that fails gives back exactly its own
claims.

* **Runs.** The batch's resources run concurrently on the agent's handler threads (each under
  its metaparameters: ``lsm.deploy.executor``), each bounded by the ``deploy_timeout`` (a handler
  past it is given up on and its thread replaced: ``lsm.deploy.handler_threads``). Resources
  their handler groups (``lsm.deploy.groups``) run as one call on one thread, bounded as one.
* **Discovery.** A discovery resource deploys like any other; what its handler found is stored
  with ``lsm.discovery.record_discovery`` in the result transaction (each in a savepoint), so a
  crash never keeps a result without its findings or the reverse. Findings that can not be
  stored fail that resource's try only. It runs again on its ``poll`` interval and on repair.
* **Fault hook.** ``LSM_FAULT_KILL_AFTER_RESULTS=1`` in the environment makes the process kill
  itself (SIGKILL) right after its first batch's results are committed, before their feedback:
  for the tests of that crash, never for production.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from datetime import datetime
from functools import partial
from pathlib import Path

from sqlmodel import Session

from lsm.deploy.executor import Executor, RunSettings
from lsm.deploy.feedback import Feedback
from lsm.deploy.groups import plan_groups, run_group_of
from lsm.deploy.handler_threads import HandlerThreads
from lsm.deploy.jail import Jail
from lsm.deploy.metaparams import Semaphores
from lsm.deploy.registry import HandlerRegistry
from lsm.discovery.results import record_discovery
from lsm.model.loader import Model
from lsm.orchestration import EnvironmentContext
from lsm.schemas.deploy import FINAL_STATUSES
from lsm.store.database import Database
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import feedback as deploy_feedback
from lsm.store.deploy import results as deploy_results
from lsm.store.deploy.claiming import Claimed
from lsm.store.deploy.results import Result
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

#: the fault hook (module docstring): kill this process right after a batch's results commit
KILL_AFTER_RESULTS = "LSM_FAULT_KILL_AFTER_RESULTS"


class BatchRunner:
    """What every batch of this process shares: the handler threads, the executor, the store."""

    def __init__(
        self,
        db: Database,
        feedback: Feedback,
        contexts: Callable[[str], EnvironmentContext],
        *,
        owner: str,
        noop: bool,
        sema: int | None,
        threads: int,
        state_dir: Path,
        deploy_timeout: float | None,
        jail: Jail | None,
        clock: Callable[[], datetime],
    ) -> None:
        self.db = db
        self.feedback = feedback
        self.contexts = contexts
        self.owner = owner
        self.noop = noop
        self.state_dir = state_dir
        self.jail = jail
        self.deploy_timeout = deploy_timeout
        self.clock = clock
        self.kill_after_results = os.environ.get(KILL_AFTER_RESULTS) == "1"
        self.executor = Executor(Semaphores(sema), clock)
        self.handlers = HandlerThreads(threads)
        #: handler calls made (a group is one): what autogroup saves, read by tests and benchmarks
        self.handler_calls = 0
        #: called with a batch's results once they are written (the watches start there)
        self.on_results: Callable[[str, list[Result], dict[str, tuple[str, str]]], None] | None = None
        self._registries: dict[str, tuple[Model, HandlerRegistry]] = {}
        self._lock = threading.Lock()

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
        # autogroup (lsm.deploy.groups): one handler call per group; a group of one runs alone
        groups = plan_groups(registry, claimed, records, run)
        self.handler_calls += len(groups)

        def one(group: list[Claimed]) -> list[Result]:
            started[group[0].resource_id] = time.monotonic()
            return run_group_of(self.executor, registry, group, records, run)

        futures: dict[Future[list[Result]], list[Claimed]] = {
            self.handlers.submit(partial(one, group)): group for group in groups
        }
        results: list[Result] = []
        waiting = set(futures)
        while waiting:
            done, waiting = wait(waiting, timeout=min(0.5, run.timeout), return_when=FIRST_COMPLETED)
            for future in done:
                group = futures[future]
                try:
                    results.extend(future.result())
                except Exception as exc:  # the executor records handler errors; this is a bug of ours
                    log.exception("deploy of %s failed outside its handler", group[0].resource_id)
                    results.extend(self._crash(item, run, exc) for item in group)
            now = time.monotonic()
            for future in list(waiting):
                group = futures[future]
                began = started.get(group[0].resource_id)
                if began is not None and now - began > run.timeout:
                    waiting.discard(future)
                    self.handlers.abandon(future)  # its thread is replaced: the rest go on
                    results.extend(
                        self.executor.timed_out(item, run, began, records.get(item.resource_id))
                        for item in group
                    )
        return results

    def _crash(self, item: Claimed, run: RunSettings, exc: BaseException) -> Result:
        result = self.executor.timed_out(item, run, time.monotonic())
        if result.action is not None:
            result.action["messages"][-1]["message"] = f"{type(exc).__name__}: {exc}"
        result.last_error = f"{type(exc).__name__}: {exc}"
        return result

    def shutdown(self) -> None:
        self.handlers.shutdown()


class DeployWork:
    """One claimed batch of one environment: run its resources, write their results, feed back."""

    def __init__(
        self,
        runner: BatchRunner,
        env_id: str,
        claimed: list[Claimed],
        skipped: list[str],
        records: dict[str, tuple[str, str]],
        skipped_sets: set[str],
        noop: bool | None = None,
        *,
        give_back: Callable[[str, list[str]], int],
        done: Callable[[DeployWork], None],
    ) -> None:
        self.runner = runner
        self.env_id = env_id
        self.claimed = claimed
        self.skipped = skipped
        self.records = records
        self.skipped_sets = skipped_sets
        #: ``deploy_noop`` as committed when the batch was claimed (None: never set)
        self.noop = noop
        self.give_back = give_back
        self.done = done
        self.label = f"deploy of {len(claimed)} resource(s) of environment {env_id}"

    def deadline(self) -> float | None:
        return None  # each resource is bounded by deploy_timeout; the batch waits for no more

    def expire(self) -> None:
        pass

    def run(self) -> None:
        runner = self.runner
        try:
            results = runner.execute(self.env_id, self.claimed, self.records, noop=self.noop)
            results, pending = deploy_claims.retry_conflicts(
                partial(self.write, results), f"result write of environment {self.env_id}"
            )
            if runner.kill_after_results:
                os.kill(os.getpid(), signal.SIGKILL)
            if runner.on_results is not None:
                runner.on_results(self.env_id, results, self.records)
            sets, changed = self.completed(results)
            runner.feedback.deliver(pending, self.env_id, sets, changed)
        except Exception as exc:
            log_failure(
                log,
                exc,
                "deploy batch of environment %s failed; its resources go back to pending",
                self.env_id,
            )
            try:
                self.give_back(self.env_id, [c.resource_id for c in self.claimed])
            except Exception as again:
                log_failure(log, again, "could not give back the batch (the recovery pass takes it back)")
        finally:
            self.done(self)

    def completed(self, results: list[Result]) -> tuple[set[str], set[str]]:
        """The sets and resources whose outcome is new and final: what the feedback looks at."""
        final = [r for r in results if r.status in FINAL_STATUSES]
        return {r.set_name for r in final} | self.skipped_sets, {r.resource_id for r in final} | set(
            self.skipped
        )

    def write(self, results: list[Result]) -> tuple[list[Result], int | None]:
        """The batch's one result transaction: lock its rows (global order), store discoveries,
        write the results, and note that their lifecycle feedback is due. Safe to repeat whole."""
        runner = self.runner
        with runner.db.write() as session:
            conn = session.connection()
            now = runner.clock()
            locked = deploy_results.lock_results(conn, self.env_id, runner.owner, results)
            results = self.record_discoveries(session, results, locked.mine)
            deploy_results.write_results(conn, self.env_id, runner.owner, now, results, locked)
            sets, changed = self.completed(results)
            pending = deploy_feedback.record_pending(conn, self.env_id, runner.owner, sets, changed, now)
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
        runner = self.runner
        items = {c.resource_id: c for c in self.claimed}
        now = runner.clock()
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
                    result = runner.executor.refused(result, item, self.records.get(result.resource_id), exc)
            out.append(result)
        return out


__all__ = ["KILL_AFTER_RESULTS", "BatchRunner", "DeployWork"]
