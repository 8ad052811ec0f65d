"""``AgentService``: a process's deploy agent, put together from pieces named for their jobs.

Why pieces: an agent does several jobs on different clocks, and each is easier to reason about
(and to test) alone. The service loop (``lsm.services.loop``) already claims work on runner
threads, calls keepalives on its heartbeat and wakes on ``NOTIFY`` (DESIGN: one loop for
workers, agents and the scheduler), so the agent hands it work sources and keepalives, never a
loop of its own; it never imports ``lsm.services`` (a higher layer).

Work sources (``sources``), each a job of its own:

* ``RecoveryPasses`` (``lsm.deploy.recovery``): when the process starts, and after it took agent
  names over, take back the claims of dead holders and finish the feedback a crash interrupted;
* ``Planning`` (``lsm.deploy.planner``): plan the environments with a new desired-state version;
* ``Claiming`` (``lsm.deploy.claiming``): claim a batch of ready resources of held names; the
  batch (``lsm.deploy.batches.DeployWork``) runs its handlers, writes the results in one
  transaction and hands the outcomes to the lifecycle feedback (``lsm.deploy.feedback``);
* ``ComplianceRuns`` (``lsm.deploy.compliance``): claim one agent's part of a compliance report
  and read its resources' targets, changing nothing.

On the loop's heartbeat (``keepalives``), each alone: ``keepalive`` renews the presence and name
leases and gives back names above the fair share (``lsm.deploy.names``); ``recover`` runs the
recovery pass (nothing waits for the periodic repair); the repair schedule (``lsm.deploy.repairs``)
sets due environments' deployed resources back to ``pending``; ``watch`` compares the watches
with the rows (``lsm.deploy.watch``: resources deployed here are watched where their handler
can, and a watch event marks the resource for a check through ``lsm.deploy.drift``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from lsm.deploy.batches import BatchRunner
from lsm.deploy.claiming import Claiming
from lsm.deploy.compliance import ComplianceChecker, ComplianceRuns
from lsm.deploy.drift import DriftQueue
from lsm.deploy.feedback import Feedback
from lsm.deploy.jail import Jail
from lsm.deploy.names import AgentNames
from lsm.deploy.planner import Planner, Planning
from lsm.deploy.recovery import Recovery, RecoveryPasses
from lsm.deploy.repairs import Repairs
from lsm.deploy.watch import Watches
from lsm.orchestration import EnvironmentContext, Orchestrator
from lsm.store.database import Database
from lsm.store.tables import utcnow
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)


class AgentService:
    """Deploy agents of this process (``lsm agent``, or embedded in ``lsm server``)."""

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
        self.owner = owner
        self.clock = clock
        self._stopped = False
        #: called when work may be waiting (the loop's ``wake``); set by the composition root
        self.wake: Callable[[str | None], None] = _no_wake
        stopped, wake = self.stopped, self._wake
        self.feedback = Feedback(db, orchestrator, contexts)
        self.planner = Planner(db, self.feedback, owner=owner)
        self.recovery = Recovery(db, self.feedback, owner=owner, lease_ttl=lease_ttl)
        self.passes = RecoveryPasses(self.recover, stopped)
        self.names = AgentNames(
            db,
            self.recovery,
            owner=owner,
            info=dict(info or {}),
            lease_ttl=lease_ttl,
            clock=clock,
            taken_over=self.passes.request,
        )
        self.runner = BatchRunner(
            db,
            self.feedback,
            contexts,
            owner=owner,
            noop=noop,
            sema=sema,
            threads=threads,
            state_dir=state_dir,
            deploy_timeout=deploy_timeout,
            jail=jail,
            clock=clock,
        )
        self.claiming = Claiming(
            db,
            self.names,
            self.runner,
            owner=owner,
            agents=agents,
            batch=batch,
            clock=clock,
            stopped=stopped,
            wake=wake,
        )
        self.planning = Planning(self.planner, stopped=stopped, wake=wake)
        self.repairs = Repairs(db, contexts, wake=wake)
        self.drift = DriftQueue(db, wake)
        self.watches = Watches(db, self.runner, self.names, self.drift, clock=clock)
        self.runner.on_results = self.watches.deployed
        self.claiming.finished = self.drift.flush
        self.compliance = ComplianceRuns(
            db,
            lambda env_id: self.runner.registry(env_id)[0],
            ComplianceChecker(threads=threads, state_dir=state_dir, jail=jail),
            owner=owner,
            dead=self.recovery.dead,
            agents=agents,
            clock=clock,
            stopped=stopped,
        )

    @property
    def sources(self) -> list[Any]:
        """The agent's work sources for the service loop (``lsm.services.loop.WorkSource``)."""
        return [self.passes, self.planning, self.claiming, self.compliance]

    @property
    def keepalives(self) -> list[Callable[[], None]]:
        """What the service loop calls on its heartbeat, each alone (a failure stops no other)."""
        return [self.keepalive, self.recover, self.repair, self.watch]

    def stopped(self) -> bool:
        return self._stopped

    def _wake(self, topic: str | None) -> None:
        self.wake(topic)  # looked up per call: the composition root sets ``wake`` after this

    def keepalive(self) -> None:
        """Renew this process's presence and its names; give back names it no longer needs."""
        if not self._stopped:
            self.names.keep(self.claiming.busy(), watched=self.watches.names_watched())

    def recover(self) -> None:
        """The recovery pass (``lsm.deploy.recovery``); its failure is logged, never fatal."""
        if self._stopped:
            return
        try:
            self.recovery.sweep(self.clock(), self.claiming.running())
        except Exception as exc:
            log_failure(
                log, exc, "agent %s: the recovery pass failed (tried again at the next heartbeat)", self.owner
            )

    def repair(self) -> None:
        """The periodic repair's schedule (``lsm.deploy.repairs``), at this heartbeat's time."""
        if not self._stopped:
            self.repairs.schedule(self.clock())

    def watch(self) -> None:
        """The watches' heartbeat (``lsm.deploy.watch``): start, stop and move them with the rows."""
        if not self._stopped:
            self.watches.keep()

    def stop(self) -> None:
        """Give back every name and the presence lease, then this process's claims; no new claims."""
        self._stopped = True
        self.watches.stop()
        try:
            self.names.give_up()
        except Exception as exc:
            log_failure(log, exc, "agent %s: could not give back its names", self.owner)
        self.names.held.clear()
        self.runner.shutdown()


def _no_wake(_topic: str | None = None) -> None:
    pass


__all__ = ["AgentService"]
