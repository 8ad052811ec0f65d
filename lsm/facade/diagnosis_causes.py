"""What every rule of a diagnosis shares: the situation it reads, and the causes it words.

Why apart from the rules (``lsm.facade.diagnosis``, ``lsm.facade.diagnosis_resources``): a
cause (a stale lease, a halt, a resource waiting for its agent) reads the same whichever rule
found it, and each rule's module stays about one question.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import RowMapping
from sqlmodel import Session

from lsm.schemas.inventory import Cause, CauseSubject, InstanceOut
from lsm.store.batches import aware
from lsm.store.deploy import queries as deploy_queries
from lsm.store.deploy.queries import DeployState
from lsm.store.environments import halts
from lsm.store.leases import process_gone
from lsm.store.tables import CompileRow, EventRow, LeaseRow, utcnow


def clock(at: datetime | None) -> str:
    """A time as a person reads it in one line: ``12:03:05 UTC`` (the ``at`` field has the date)."""
    return "?" if at is None else f"{aware(at):%H:%M:%S} UTC"


def summary(subject: str, chain: list[Cause]) -> str:
    """The chain read as one line: ``X is in `S` because A because B``."""
    if not chain or chain[0].kind == "none":
        return f"{subject}: {chain[0].message}" if chain else subject
    return f"{subject} because " + " because ".join(c.message for c in chain)


@dataclass
class Situation:
    """What diagnose read about one instance (the rules decide from it)."""

    env_id: str
    instance: InstanceOut
    #: ``(trigger, target)`` of each transfer out of the instance's state
    transfers: list[tuple[str, str]]
    events: list[EventRow]
    validation: CompileRow | None
    pending: CompileRow | None
    #: the instance's deploy state when the caller read it already (``instance_deploy_state``)
    deploy: DeployState | None = None


class DiagnosisBase:
    """The session, the situation and the clock of one diagnosis, and the causes its rules word."""

    def __init__(self, session: Session, situation: Situation, *, now: datetime | None = None) -> None:
        self.session = session
        self.s = situation
        self.now = aware(now or utcnow())
        #: the environment's halt and pauses, read once when a rule asks (``_brake``)
        self._brake_state: halts.HaltState | None = None

    def _cause(
        self,
        kind: str,
        message: str,
        subject: str,
        subject_id: str,
        at: datetime | None = None,
        **details: Any,
    ) -> Cause:
        return Cause.model_validate(
            {
                "kind": kind,
                "message": message,
                "subject": CauseSubject.model_validate({"type": subject, "id": subject_id}),
                "at": None if at is None else aware(at),
                "details": details,
            }
        )

    def _deploy_state(self) -> DeployState:
        return deploy_queries.instance_deploy_state(self.session, self.s.env_id, self.s.instance.id)

    # -- the brake: a halted environment, a paused agent ------------------------------------------
    def _brake(self) -> halts.HaltState:
        if self._brake_state is None:
            self._brake_state = halts.state(self.session.connection(), self.s.env_id)
        return self._brake_state

    def _halted(self, brake: halts.HaltState) -> Cause:
        by = f" by {brake.halted_by}" if brake.halted_by else ""
        message = (
            f"the environment is halted since {clock(brake.halted_at)}{by}: no compile runs and no "
            "agent deploys until it is resumed (`lsm environment resume`)"
        )
        return self._cause(
            "halted", message, "environment", self.s.env_id, brake.halted_at, halted_by=brake.halted_by
        )

    def _waits_for_agent(self, row: RowMapping) -> Cause:
        """``deploying``: the resource of ``row`` waits for its agent (what holds the agent follows)."""
        return self._cause(
            "deploying",
            f"resource {row['resource_id']} waits for agent {row['agent']}",
            "resource",
            row["resource_id"],
            agent=row["agent"],
            status=row["status"],
        )

    def taken_over(self, expires: datetime, taker: str) -> str:
        """When a stale holding is taken back (``taker``: who takes it, e.g. "agent that looks").

        Before its expiry a holding is stale only because its process is gone from this host,
        and then the next taker does not wait for the lease (``lsm.store.leases.process_gone``,
        ``owner_gone``): leases of agent names, the SQLite worker's lease and compile claims
        alike."""
        if expires > self.now:
            return (
                f"the next {taker} takes it over without waiting for the lease "
                f"(which would be taken over at {clock(expires)})"
            )
        return f"it expired at {clock(expires)} and is taken over by the next {taker}"

    def _stale_lease(self, lease: LeaseRow, what: str, taker: str = "agent") -> Cause | None:
        """A lease whose holder stopped renewing it or whose process is gone, else None."""
        expires = aware(lease.expires_at)
        gone = process_gone(lease.info or {})
        if expires > self.now and not gone:
            return None
        holder = f"{lease.owner} since {clock(lease.acquired_at)}"
        why = "whose process is gone" if gone and expires > self.now else "whose heartbeat stopped"
        when = self.taken_over(expires, f"{taker} that looks")
        message = f"the lease of {what} is held by {holder}, {why}; {when}"
        return self._cause(
            "stale_lock", message, "lock", lease.name, expires, holder=lease.owner, info=lease.info or {}
        )


__all__ = ["DiagnosisBase", "Situation", "clock", "summary"]
