"""``Planner``: turn new desired-state versions into resource-state rows, then let instances move on.

Why a cursor per environment and not a diff of versions: ``lsm.inventory.deploy_plan`` reads only
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
"""

from __future__ import annotations

from lsm.deploy.feedback import Feedback
from lsm.inventory import deploy_feedback, deploy_plan
from lsm.inventory.database import Database
from lsm.inventory.deploy_plan import PlanResult
from lsm.inventory.tables import utcnow


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
            self.feedback.run(env_id, result.sets)
            if pending is not None:
                with self.db.write() as session:
                    deploy_feedback.finish(session.connection(), pending)
        return result

    def plan_due(self) -> list[PlanResult]:
        return [self.plan(env_id) for env_id in self.due()]


__all__ = ["Planner"]
