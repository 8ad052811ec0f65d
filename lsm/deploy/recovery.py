"""``Recovery``: take back what a dead or stalled holder left, and finish interrupted feedback.

Why a pass of its own, run when an agent process starts, takes over an agent name, and on every
keepalive, and not left to the periodic repair (``deploy_repair_interval``, 600 s by default):
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
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime, timedelta

from lsm.deploy.feedback import Feedback
from lsm.inventory import deploy_claims, deploy_feedback
from lsm.inventory import leases as lease_sql
from lsm.inventory.database import Database

log = logging.getLogger(__name__)

#: the presence lease of an agent process (renewed by its keepalive)
PROCESS_PREFIX = "agent-process:"


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
            live = lease_sql.live_holders(session, [PROCESS_PREFIX + o for o in others], now=now)
        return {o for o in others if PROCESS_PREFIX + o not in live}

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
                self.run(row.id, row.env_id, row.set_names, row.resource_ids)
                done += 1
            except Exception:
                log.exception("environment %s: the interrupted deploy feedback failed again", row.env_id)
        return done

    def run(
        self, pending_id: int | None, env_id: str, sets: Collection[str], changed: Collection[str] | None
    ) -> int:
        """Run one feedback, then forget its row (``pending_id``); returns the transfers fired."""
        fired = self.feedback.run(env_id, sets, changed)
        if pending_id is not None:
            with self.db.write() as session:
                deploy_feedback.finish(session.connection(), pending_id)
        return fired

    def sweep(self, now: datetime, running: Collection[str]) -> None:
        """The whole pass (start, keepalive): stale claims, then interrupted feedback."""
        self.take_back_stale(now, running)
        self.finish_feedback(now)


__all__ = ["PROCESS_PREFIX", "Recovery"]
