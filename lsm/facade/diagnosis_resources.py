"""Rule 3 of a diagnosis: the instance's resources in the desired state it is at.

Why a module of its own: it is the deploy side of a diagnosis (failed, skipped, deploying and
held resources, the agents' leases), read through ``lsm.store.deploy.queries`` and
``diagnosis_queries``; the rules of compiles stay in ``lsm.facade.diagnosis``.
"""

from __future__ import annotations

from sqlalchemy import RowMapping

from lsm.facade.diagnosis_causes import DiagnosisBase, clock
from lsm.model.meta import MetaError, meta_of
from lsm.schemas.deploy import OPEN_STATUSES, ResourceStatus
from lsm.schemas.inventory import Cause
from lsm.store import diagnosis_queries
from lsm.store.deploy import queries as deploy_queries
from lsm.store.deploy.leases import lease_name


class ResourceRule(DiagnosisBase):
    def _resources(self) -> list[Cause]:
        record, rows, planned = self.s.deploy or self._deploy_state()
        if record is None or not planned:
            return []
        mine = [rows[rid] for rid in record.resource_ids if rid in rows]
        failing = [
            r
            for r in mine
            if r["status"] == ResourceStatus.FAILED
            or (r["status"] == ResourceStatus.PENDING and r["attempts"])
        ]
        skipped = [r for r in mine if r["status"] == ResourceStatus.SKIPPED]
        if failing:
            return [self._failed(failing[0])]
        if skipped:
            path = diagnosis_queries.blocking_path(self.session, self.s.env_id, skipped[0])
            links = [
                self._cause(
                    "skipped_dependency",
                    f"resource {row['resource_id']} is skipped",
                    "resource",
                    row["resource_id"],
                    row["last_action_at"],
                    agent=row["agent"],
                    requires=sorted(row["requires"] or []),
                )
                for row in path
                if row["status"] == ResourceStatus.SKIPPED
            ]
            root = path[-1]
            return links + ([self._failed(root)] if root["status"] == ResourceStatus.FAILED else [])
        waiting = [r for r in mine if r["status"] in OPEN_STATUSES]
        return (self._held(waiting) or self._waiting(waiting)) if waiting else []

    def _failed(self, row: RowMapping) -> Cause:
        rid, attempts = row["resource_id"], int(row["attempts"] or 0)
        retry = self._retry_of(rid)
        message = f"resource {rid} failed: {row['last_error'] or 'no error message'}"
        at = row["next_attempt_at"]
        if row["status"] == ResourceStatus.PENDING and attempts:  # the engine tries again
            of = "for ever" if retry == -1 else f"of {retry}"
            message += f", retry {attempts} {of} at {clock(at)}"
        elif attempts > 1:
            message += f" ({attempts} tries, no retry left)"
        return self._cause(
            "failed_resource",
            message,
            "resource",
            rid,
            at if row["status"] == ResourceStatus.PENDING else row["last_action_at"],
            agent=row["agent"],
            attempts=attempts,
            retry=retry,
            error=row["last_error"],
            final=row["status"] == ResourceStatus.FAILED,
        )

    def _retry_of(self, resource_id: str) -> int | None:
        desired = deploy_queries.desired_resource(self.session, self.s.env_id, resource_id)
        if desired is None:
            return None
        try:
            return meta_of(desired[1]).retry
        except MetaError:
            return None

    def _waiting(self, rows: list[RowMapping]) -> list[Cause]:
        """Resources the agents have not finished: a stale agent lease, else who deploys what."""
        by_agent: dict[str, RowMapping] = {}
        for row in rows:
            by_agent.setdefault(row["agent"], row)
        held = diagnosis_queries.leases(self.session, (lease_name(self.s.env_id, a) for a in by_agent))
        for agent, row in sorted(by_agent.items()):
            lease = held.get(lease_name(self.s.env_id, agent))
            stale = self._stale_lease(lease, f"agent {agent}") if lease is not None else None
            if stale is not None:
                return [self._waits_for_agent(row), stale]
        agent, row = sorted(by_agent.items())[0]
        lease = held.get(lease_name(self.s.env_id, agent))
        if row["status"] == ResourceStatus.DEPLOYING:
            message = f"agent {agent} is deploying resource {row['resource_id']}"
        elif lease is None:
            message = f"resource {row['resource_id']} waits for agent {agent}, which no agent process holds"
        else:
            message = f"resource {row['resource_id']} waits for agent {agent}"
        return [
            self._cause(
                "deploying",
                message,
                "resource",
                row["resource_id"],
                row["last_action_at"],
                agent=agent,
                status=row["status"],
                holder=None if lease is None else lease.owner,
            )
        ]

    def _held(self, rows: list[RowMapping]) -> list[Cause]:
        """Resources waiting (``pending``) for an agent the brake holds: the resource, then the
        halt or the pause; nothing when no waiting resource is held."""
        brake = self._brake()
        held = [r for r in rows if r["status"] == ResourceStatus.PENDING and brake.holds(r["agent"])]
        if not held:
            return []
        row = held[0]
        agent = row["agent"]
        waiting = self._waits_for_agent(row)
        if brake.halted:
            return [waiting, self._halted(brake)]
        pause = brake.paused[agent]
        by = f" by {pause.paused_by}" if pause.paused_by else ""
        message = (
            f"agent {agent} is paused since {clock(pause.paused_at)}{by}: its resources wait until it "
            f"is unpaused (`lsm agent unpause {agent}`)"
        )
        paused = self._cause(
            "agent_paused",
            message,
            "agent",
            agent,
            pause.paused_at,
            paused_by=pause.paused_by,
            stay_paused=pause.stay_paused,
        )
        return [waiting, paused]


__all__ = ["ResourceRule"]
