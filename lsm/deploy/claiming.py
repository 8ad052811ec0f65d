"""``Claiming``: the deploy agent's claim, a work source of the service loop that only claims.

Why a claim is only a claim: planning new versions (``lsm.deploy.planner.Planning``), finishing
what a dead holder left (``lsm.deploy.recovery.RecoveryPasses``) and the periodic repair
(``lsm.deploy.repairs``) are work and timers of their own; a claim finds the names with open
work, takes its share of them (``lsm.deploy.names``) and claims a batch of READY resources of
held names in one transaction (``lsm.store.deploy.claiming.claim``; blocked ones are marked
``skipped``). Names of a halted environment and paused names are left out, and asked again in
the claim's transaction (``lsm.store.environments.halts``): a halt or pause stops new claims at once.
Environments take turns, so one with a long backlog does not starve the others.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from datetime import datetime
from typing import Any

from lsm.deploy.batches import BatchRunner, DeployWork
from lsm.deploy.names import AgentNames, Name, by_environment
from lsm.store.database import Database
from lsm.store.deploy import claiming as deploy_claiming
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import names as deploy_names
from lsm.store.deploy import queries as deploy_queries
from lsm.store.deploy.plan import affected_sets
from lsm.store.environments import halts


class Claiming:
    name = "deploy"

    def __init__(
        self,
        db: Database,
        names: AgentNames,
        runner: BatchRunner,
        *,
        owner: str,
        agents: Collection[str] | None,
        batch: int,
        clock: Callable[[], datetime],
        stopped: Callable[[], bool],
        wake: Callable[[str | None], None],
    ) -> None:
        self.db = db
        self.names = names
        self.runner = runner
        self.owner = owner
        #: the agent names this process may hold (``None``: any)
        self.agents = set(agents) if agents else None
        self.batch = max(1, batch)
        self.clock = clock
        self.stopped = stopped
        #: the loop's ``wake``: a finished batch may have made its dependants ready
        self.wake = wake
        self._inflight: dict[Name, int] = defaultdict(int)
        self._running: set[DeployWork] = set()
        self._lock = threading.Lock()
        self._turn = 0
        #: called when a batch finished (drift held back by a running deploy is marked then)
        self.finished: Callable[[], None] = _nothing

    # -- WorkSource ----------------------------------------------------------------------------------
    def claim(self) -> DeployWork | None:
        if self.stopped():
            return None
        with self.db.read() as session:
            names = deploy_names.open_names(session.connection(), self.clock())
            names = halts.runnable(session.connection(), names)  # not halted, not paused
        if self.agents is not None:
            names = {n for n in names if n[1] in self.agents}
        if not names:
            return None
        self.names.take(names)
        by_env = by_environment(self.names.mine(names))
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
        """Leases are renewed by the agent's keepalive (names are held whether or not a batch runs)."""

    def release(self, running: Sequence[Any]) -> None:
        """Shutdown with batches still running: their rows go back to ``pending`` for another agent."""
        for work in sorted(running, key=lambda w: getattr(w, "env_id", "")):
            if isinstance(work, DeployWork):
                self.give_back(work.env_id, [c.resource_id for c in work.claimed])

    # -- claims ------------------------------------------------------------------------------------------
    def _claim_in(self, env_id: str, agents: list[str]) -> DeployWork | None:
        now = self.clock()
        with self.db.write() as session:
            conn = session.connection()
            agents = halts.free_agents(conn, env_id, agents)  # a halt or pause since the look above
            if not agents:
                return None
            claimed, skipped = deploy_claiming.claim(conn, env_id, agents, self.owner, now, self.batch)
            if not claimed and not skipped:
                return None
            records = deploy_claiming.desired_records(conn, env_id, claimed)
            skipped_sets = affected_sets(conn, env_id, skipped) if skipped else set()
            noop = deploy_queries.committed_noop(conn, env_id)  # not the cached settings' value
        work = DeployWork(
            self.runner,
            env_id,
            claimed,
            skipped,
            records,
            skipped_sets,
            noop,
            give_back=self.give_back,
            done=self.done,
        )
        with self._lock:
            for c in claimed:
                self._inflight[(env_id, c.agent)] += 1
            self._running.add(work)
        return work

    def give_back(self, env_id: str, resource_ids: list[str]) -> int:
        """Give back exactly these claims of this process (its own, in the global lock order, in
        a transaction of its own that is retried on a conflict): other batches of the same names
        run on."""

        def transaction() -> int:
            with self.db.write() as session:
                return deploy_claims.release_claims(session.connection(), env_id, self.owner, resource_ids)

        return deploy_claims.retry_conflicts(transaction, f"give-back of a batch of environment {env_id}")

    def done(self, work: DeployWork) -> None:
        with self._lock:
            self._running.discard(work)
            for c in work.claimed:
                name = (work.env_id, c.agent)
                self._inflight[name] -= 1
                if self._inflight[name] <= 0:
                    del self._inflight[name]
        self.finished()
        self.wake(work.env_id)  # dependants may be ready now

    def busy(self) -> set[Name]:
        """The names a batch of this process runs now."""
        with self._lock:
            return set(self._inflight)

    def running(self) -> set[str]:
        """The resource ids a batch of this process runs now (its claims that are not stale)."""
        with self._lock:
            return {c.resource_id for work in self._running for c in work.claimed}


def _nothing() -> None:
    pass


__all__ = ["Claiming"]
