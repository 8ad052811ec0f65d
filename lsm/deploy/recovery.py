"""``Recovery``: take back what a dead or stalled holder left, and finish interrupted feedback.

Why a pass of its own, run when an agent process starts, takes over an agent name, and on every
heartbeat, and not left to the periodic repair (``deploy_repair_interval``, 600 s by default):
work must never wait for a timer that long because a process died. Two things can be left:

* **Claims** (``deploying`` rows). A claim belongs to the agent process that made it
  (``claimed_by``). One whose holder is dead (its presence lease ``agent-process:<owner>``
  expired, or its process gone from this host) goes back to ``pending``; so does a claim of
  this process older than the lease that no batch of this process runs any more (a give-back
  that failed). A live holder's running claims are never touched: their results would be
  fenced out and the work done twice.
* **Feedback** (``lsm_deploy_feedback`` rows). Written in the transaction of the results (or
  of a plan) and deleted once the lifecycle feedback ran; a crash in between leaves the row.
  The pass runs the feedback of rows whose holder is dead, and of this process's own rows
  older than the lease (its feedback failed: a running one takes well under a lease). Firing
  a feedback twice is harmless (``lsm.deploy.feedback``).

Both reads go through what is pending only (the partial index of claimed rows, the small
feedback table), so a pass costs the work left behind, not the size of the inventory.

The pass runs as work of its own (``RecoveryPasses``: when the process starts and after it took
names over) and on every heartbeat of the service loop; a claim never runs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection
from datetime import datetime, timedelta

from lsm.deploy.feedback import Feedback
from lsm.deploy.work import Job
from lsm.store import leases as lease_sql
from lsm.store.database import Database
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import feedback as deploy_feedback
from lsm.store.deploy.leases import process_lease_name
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)


class Recovery:
    def __init__(self, db: Database, feedback: Feedback, *, owner: str, lease_ttl: float) -> None:
        self.db = db
        self.feedback = feedback
        self.owner = owner
        self.lease_ttl = lease_ttl

    def dead(self, owners: Collection[str], now: datetime) -> set[str]:
        """The owners among ``owners`` (other than this process) that hold no live presence lease."""
        others = sorted({o for o in owners if o != self.owner})
        if not others:
            return set()
        with self.db.read() as session:
            live = lease_sql.live_holders(session, [process_lease_name(o) for o in others], now=now)
        return {o for o in others if process_lease_name(o) not in live}

    def take_back_names(self, env_id: str, agents: Collection[str], now: datetime) -> int:
        """Rows of these (just taken) agent names claimed by dead holders go back to ``pending``."""
        with self.db.read() as session:
            claims = deploy_claims.claims_of(session.connection(), env_id, sorted(agents))
        released = 0
        for owner in sorted(self.dead(claims, now) | ({""} & claims.keys())):
            released += self._give_back(env_id, owner, claims[owner])
        return released

    def take_back_stale(self, now: datetime, running: Collection[str]) -> int:
        """Claims older than the lease: those of dead holders, and those of this process that
        none of its batches runs (``running``: the resource ids in flight here)."""
        with self.db.read() as session:
            stale = deploy_claims.stale_claims(session.connection(), now - timedelta(seconds=self.lease_ttl))
        if not stale:
            return 0
        dead = self.dead({owner for _env, owner in stale}, now)
        released = 0
        for (env_id, owner), ids in sorted(stale.items()):
            if owner == self.owner:
                ids = [i for i in ids if i not in running]
            elif owner and owner not in dead:
                continue  # a live holder re-examines its own claims
            if ids:
                released += self._give_back(env_id, owner, ids)
        return released

    def _give_back(self, env_id: str, owner: str, ids: list[str]) -> int:
        def give_back() -> int:
            with self.db.write() as session:
                return deploy_claims.release_claims(session.connection(), env_id, owner, ids)

        released = deploy_claims.retry_conflicts(give_back, f"giving back claims of {owner or 'nobody'}")
        if released:
            log.info("environment %s: %d claim(s) of %s taken back", env_id, released, owner or "nobody")
        return released

    def finish_feedback(self, now: datetime) -> int:
        """Run the feedback that dead holders (or a failure here) left; returns how many ran."""
        with self.db.read() as session:
            rows = deploy_feedback.pending(session.connection())
        if not rows:
            return 0
        dead = self.dead({r.owner for r in rows}, now)
        old = now - timedelta(seconds=self.lease_ttl)
        done = 0
        for row in rows:
            mine_failed = row.owner == self.owner and row.created_at < old
            if not mine_failed and row.owner not in dead:
                continue
            try:
                self.feedback.deliver(row.id, row.env_id, row.set_names, row.resource_ids)
                done += 1
            except Exception as exc:
                log_failure(
                    log, exc, "environment %s: the interrupted deploy feedback failed again", row.env_id
                )
        return done

    def sweep(self, now: datetime, running: Collection[str]) -> None:
        """The whole pass (start, take-over, heartbeat): stale claims, then interrupted feedback."""
        self.take_back_stale(now, running)
        self.finish_feedback(now)


class RecoveryPasses:
    """The recovery pass as a work source of the service loop: due when the process starts (it
    begins by finishing what a dead one left) and again each time it took agent names over."""

    name = "deploy-recovery"

    def __init__(self, run_pass: Callable[[], None], stopped: Callable[[], bool]) -> None:
        self.run_pass = run_pass
        self.stopped = stopped
        self._due = True
        self._lock = threading.Lock()

    def request(self) -> None:
        """Names were taken over: the feedback their dead holders left is due."""
        with self._lock:
            self._due = True

    def claim(self) -> Job | None:
        with self._lock:
            if self._due and not self.stopped():
                self._due = False
                return Job("deploy recovery pass", self.run_pass)
        return None

    def heartbeat(self, running: object) -> None:
        """A pass holds no lease of its own."""

    def release(self, running: object) -> None:
        """Nothing to give back: an interrupted pass is run again at the next heartbeat."""


__all__ = ["Recovery", "RecoveryPasses"]
