"""``Planner``: turn new desired-state versions into resource-state rows, then let instances move on.

Why a cursor per environment and not a diff of versions: ``lsm.store.deploy.plan`` reads only
the rows written or closed since the last planned version, in one write transaction that locks
the environment's ``lsm_deploy_head`` row (on SQLite the write transaction is exclusive), so a
version that changes one set of a 100,000-set base costs one set's rows, and two agents never
plan the same version twice.

After a plan, the lifecycle feedback (``lsm.deploy.feedback``) looks at the instances of the sets
that changed: an instance whose resources are all deployed already (unchanged attributes under
a new desired-state version) or that has none moves on at once, without waiting for a deploy.
That feedback is noted in the plan's own transaction (``lsm_deploy_feedback``) and forgotten
once it ran, so a crash in between leaves it to the next agent's recovery pass
(``lsm.deploy.recovery``).

``Planning`` is the planner as a work source of the service loop: a plan is work of its own,
never a step of a claim.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from lsm.deploy.feedback import Feedback
from lsm.deploy.work import Job
from lsm.store.database import Database
from lsm.store.deploy import feedback as deploy_feedback
from lsm.store.deploy import plan as deploy_plan
from lsm.store.deploy.plan import PlanResult
from lsm.store.tables import utcnow
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)


class Planner:
    def __init__(self, db: Database, feedback: Feedback | None = None, *, owner: str = "") -> None:
        self.db = db
        self.feedback = feedback
        self.owner = owner  # the agent process that runs the plan's feedback

    def due(self) -> list[str]:
        """Environments with a desired-state version not planned yet (a read, cheap when none)."""
        with self.db.read() as session:
            return deploy_plan.due_environments(session.connection())

    def plan(self, env_id: str) -> PlanResult:
        """Plan ``env_id`` up to its newest version (nothing when it is planned already)."""
        pending: int | None = None
        with self.db.write() as session:
            result = deploy_plan.plan(session.connection(), env_id)
            if result.planned and self.feedback is not None:
                pending = deploy_feedback.record_pending(
                    session.connection(), env_id, self.owner, result.sets, None, utcnow()
                )
        if result.rows_written >= deploy_plan.BULK_ROWS and not self.db.is_sqlite:
            with self.db.write() as session:  # after the commit: the sample sees the new rows
                deploy_plan.refresh_statistics(session.connection())
        if result.planned and self.feedback is not None:
            self.feedback.deliver(pending, env_id, result.sets, None)
        return result

    def plan_due(self) -> list[PlanResult]:
        return [self.plan(env_id) for env_id in self.due()]


class Planning:
    """The environments with a new desired-state version, planned as work of the service loop."""

    name = "deploy-plan"

    def __init__(
        self, planner: Planner, *, stopped: Callable[[], bool], wake: Callable[[str | None], None]
    ) -> None:
        self.planner = planner
        self.stopped = stopped
        #: the loop's ``wake``: once planned, resources may be ready to claim
        self.wake = wake

    def claim(self) -> Job | None:
        if self.stopped():
            return None
        due = self.planner.due()
        if not due:
            return None
        return Job(f"deploy plan of {len(due)} environment(s)", partial(self.plan, due))

    def plan(self, env_ids: list[str]) -> None:
        """Plan each environment; one that fails is logged and planned again on the next look."""
        for env_id in env_ids:
            try:
                self.planner.plan(env_id)
            except Exception as exc:
                log_failure(log, exc, "environment %s: the deploy plan failed", env_id)
        self.wake(None)

    def heartbeat(self, running: object) -> None:
        """A plan holds no lease: the environment's cursor row is locked in its transaction."""

    def release(self, running: object) -> None:
        """Nothing to give back: a plan not committed is planned again."""


__all__ = ["Planner", "Planning"]
