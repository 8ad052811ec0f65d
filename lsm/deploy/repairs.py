"""``Repairs``: schedule the periodic repair of deployed resources (``deploy_repair_interval``).

Why a piece of its own, run on the agent's heartbeat and not by its keepalive or its claim: the
repair is a timer over every environment the planner has seen, not a lease to renew nor a batch
to take. When an environment's interval has passed, its deployed rows become ``pending`` and are
re-read (drift fixed) by the agents' next claims. The tick is stored and locked
(``lsm.store.deploy.repair``), so several agent processes fire one repair per interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from lsm.orchestration import EnvironmentContext
from lsm.store.database import Database
from lsm.store.deploy import names as deploy_names
from lsm.store.deploy import repair as deploy_repair
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)


class Repairs:
    def __init__(
        self,
        db: Database,
        contexts: Callable[[str], EnvironmentContext],
        *,
        wake: Callable[[str | None], None],
    ) -> None:
        self.db = db
        self.contexts = contexts
        #: the loop's ``wake``: repaired resources are ready to claim
        self.wake = wake

    def schedule(self, now: datetime) -> int:
        """Every deployed resource of an environment whose repair is due becomes ``pending``, once
        per interval whichever agent fires it; returns how many rows were set to pending."""
        with self.db.read() as session:
            envs = deploy_names.planned_environments(session.connection())
        scheduled = 0
        for env_id in envs:
            try:
                interval = self.contexts(env_id).settings.deploy_repair_interval
                with self.db.write() as session:
                    scheduled += deploy_repair.repair_if_due(session, env_id, now, interval)
            except Exception as exc:
                log_failure(log, exc, "environment %s: the repair could not be scheduled", env_id)
        if scheduled:
            self.wake(None)
        return scheduled


__all__ = ["Repairs"]
