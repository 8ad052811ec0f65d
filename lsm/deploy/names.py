"""``AgentNames``: the agent names this process holds, through leases, and its fair share of them.

Why leases: each resource names its agent, and an agent name of an environment is deployed by
one process at a time, through the lease ``agent:<env_id>:<agent>`` (``lsm.store.deploy.leases``).
A process takes free names that have open work, up to a fair share (``ceil(names / live agent
processes)``, counted by the presence leases ``agent-process:<owner>``), and gives back names
above its share, so several ``lsm agent`` processes on PostgreSQL share the names. Which free
names a process prefers is its own (ordered by a hash of owner and name, so processes spread
over the names), but the leases are always taken in name order, the global lock order
(docs/architecture.md). A name whose holder died (kill -9) is taken over once its lease
expires, or at once when the holder was a process of this host that is gone; on taking a name,
the rows its dead holders left ``deploying`` go back to ``pending`` (``lsm.deploy.recovery``).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

from lsm.deploy.recovery import Recovery
from lsm.store import leases as lease_sql
from lsm.store.database import Database
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import names as deploy_names
from lsm.store.deploy.leases import lease_name, process_lease_name
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

Name = tuple[str, str]  # (env_id, agent)


def by_environment(names: Collection[Name]) -> dict[str, list[str]]:
    """``{env_id: [agent]}`` of ``names``, each list in name order."""
    out: dict[str, list[str]] = defaultdict(list)
    for env_id, agent in sorted(names):
        out[env_id].append(agent)
    return dict(out)


class AgentNames:
    def __init__(
        self,
        db: Database,
        recovery: Recovery,
        *,
        owner: str,
        info: dict[str, Any],
        lease_ttl: float,
        clock: Callable[[], datetime],
        taken_over: Callable[[], None],
    ) -> None:
        self.db = db
        self.recovery = recovery
        self.owner = owner
        self.info = info
        self.lease_ttl = lease_ttl
        self.clock = clock
        #: called when names were taken: the feedback their dead holders left is due
        self.taken_over = taken_over
        self.held: set[Name] = set()
        self._other_until: dict[Name, float] = {}
        self._lock = threading.Lock()

    def mine(self, names: Collection[Name]) -> list[Name]:
        """The names among ``names`` this process holds, in name order."""
        with self._lock:
            return sorted(n for n in names if n in self.held)

    def snapshot(self) -> set[Name]:
        """The names this process holds now (a copy)."""
        with self._lock:
            return set(self.held)

    def preference(self, name: Name) -> str:
        """This process's own order of preference among free names: processes that look at the
        same names at once try different ones first, so they spread instead of all contending
        for the first (what a shuffle did), while the leases are still taken in name order."""
        return hashlib.blake2b(f"{self.owner}|{name[0]}|{name[1]}".encode(), digest_size=8).hexdigest()

    def _acquire(self, session: Any, name: str, now: datetime, *, steal: bool = False) -> Any:
        return lease_sql.acquire(
            session, name, self.owner, now=now, ttl=self.lease_ttl, info=self.info, steal=steal
        )

    def take(self, names: set[Name]) -> None:
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
            self._acquire(session, process_lease_name(self.owner), now)
            share = math.ceil(len(names) / deploy_names.live_processes(session.connection(), now))
            with self._lock:
                room = share - len([n for n in self.held if n in names])
            if room <= 0:
                return
            wanted = sorted(sorted(unheld, key=self.preference)[:room])
            for name in wanted:
                row = self._acquire(session, lease_name(*name), now)
                if row.owner != self.owner and lease_sql.process_gone(dict(row.info or {})):
                    row = self._acquire(session, lease_name(*name), now, steal=True)
                if row.owner != self.owner:
                    self._other_until[name] = mono + min(2.0, self.lease_ttl / 3)
                    continue
                taken.append(name)
        with self._lock:
            self.held.update(taken)
        for env_id, agents in sorted(by_environment(taken).items()):
            # a name taken (over): whatever its dead holders left deploying goes back to pending
            try:
                self.recovery.take_back_names(env_id, agents, now)
            except Exception as exc:
                log_failure(log, exc, "environment %s: claims of dead holders not taken back yet", env_id)
        if taken:  # and the feedback they left undone
            self.taken_over()

    def keep(self, busy: Collection[Name], watched: Collection[Name] = ()) -> None:
        """Renew this process's presence and its names; give back names it no longer needs
        (``busy``: the names a batch of this process runs now, kept whatever the share;
        ``watched``: names whose resources this process watches, kept while idle, so that their
        watches stay where they are; given back as surplus like any other)."""
        now = self.clock()
        with self.db.read() as session:
            names = deploy_names.open_names(session.connection(), now)
        with self.db.write() as session:
            self._acquire(session, process_lease_name(self.owner), now)
            processes = deploy_names.live_processes(session.connection(), now)
            share = math.ceil(max(1, len(names)) / processes)
            with self._lock:
                held = sorted(self.held)
            mine_open = [n for n in held if n in names]
            extra = max(0, len(mine_open) - share)
            for name in held:
                # alone, a process keeps its idle names (taking a name back costs a lease write
                # on the next change); with others, it gives them back for them to take
                idle = processes > 1 and name not in names and name not in busy and name not in watched
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

    def give_up(self) -> None:
        """Give back every name and the presence lease, then this process's claims of them."""
        with self.db.write() as session:
            lease_sql.release(session, process_lease_name(self.owner), self.owner)
            for name in sorted(self.held):
                lease_sql.release(session, lease_name(*name), self.owner)
            for env_id, agents in sorted(by_environment(self.held).items()):
                deploy_claims.release_names(session.connection(), env_id, agents, owner=self.owner)


__all__ = ["AgentNames", "Name", "by_environment"]
