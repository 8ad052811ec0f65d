"""Lifecycle feedback: when an instance's resources reached a final outcome, fire its resource-based transfer.

Why through the orchestrator: it is the one place that changes an instance's state
(``ResourceOutcome`` commands, applied in batches by ``apply_resource_outcomes``), with the
version check, the event line and the follow-up compile in one commit. This module only
decides *when*:

* only instances whose resource record (``lsm_instance_resources``) was compiled at the
  instance's current ``desired_state_version``: the resources of an older desired state say
  nothing about this one (the orchestrator checks it again when it decides);
* only in a state that has a ``resource_based`` transfer;
* all resources ``deployed`` (or none at all) -> success; all final and one ``failed`` or
  ``skipped`` -> failure; anything still ``pending`` / ``deploying`` / ``noop_pending`` -> wait.

Deciding and handing off are apart: ``decide`` works out the outcomes from what was read, and
``hand_off`` is the one call site that gives them to the orchestrator.

Firing twice for one outcome is harmless: a self transfer with no operation (``up -> up``) is
not executed (no version bump, no event line, no compile), and a transfer already taken leaves
the instance in a state where the outcome fires nothing new. The actor is ``system``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from lsm.errors import LsmError
from lsm.orchestration import EnvironmentContext, Orchestrator, apply_resource_outcomes
from lsm.orchestration.commands import ResourceOutcome
from lsm.schemas.deploy import FINAL_STATUSES, ResourceStatus
from lsm.store.database import Database
from lsm.store.deploy import feedback as deploy_feedback
from lsm.store.deploy.feedback import InstanceDeploy

log = logging.getLogger(__name__)


def outcome_of(statuses: Iterable[str]) -> bool | None:
    """``True``: all deployed (or none); ``False``: all final, one failed or skipped; ``None``: wait."""
    seen = list(statuses)
    if any(s not in FINAL_STATUSES for s in seen):
        return None
    return all(s == ResourceStatus.DEPLOYED for s in seen)


@dataclass(frozen=True)
class Outcome:
    """One instance's deploy outcome, decided: the command and the state it was decided in."""

    command: ResourceOutcome
    #: the instance's state when the outcome was decided (did the transfer move it on?)
    state: str


def hand_off(orchestrator: Orchestrator, ctx: EnvironmentContext, outcomes: Sequence[Outcome]) -> int:
    """Hand decided outcomes to the orchestrator, the one place that changes an instance's
    state; returns how many moved an instance on. The only call site of the deploy engine into
    the orchestrator: the outcomes go in batches, decided ahead like validation outcomes
    (``apply_resource_outcomes``), and one refused (a newer version, a state that moved on) is
    logged without holding the others back."""
    if not outcomes:
        return 0
    answers = apply_resource_outcomes(orchestrator, ctx, [o.command for o in outcomes])
    fired = 0
    for outcome, answer in zip(outcomes, answers, strict=True):
        if isinstance(answer, LsmError):
            log.warning("deploy outcome of instance %s not applied: %s", outcome.command.instance_id, answer)
        else:
            fired += answer.state != outcome.state
    return fired


class Feedback:
    def __init__(
        self, db: Database, orchestrator: Orchestrator, contexts: Callable[[str], EnvironmentContext]
    ) -> None:
        self.db = db
        self.orchestrator = orchestrator
        self.contexts = contexts

    def run(self, env_id: str, set_names: Iterable[str], changed: Collection[str] | None = None) -> int:
        """Fire the resource-based transfers that the deploys of these sets completed; how many ran.

        ``changed``: the resources whose outcome is new (a batch's results); only instances that
        own one of them are looked at, so another resource's outcome in the same set does not
        repeat an instance's failure. ``None`` (a new plan): every instance of the sets.
        """
        names = {n for n in set_names if n}
        if not names:
            return 0
        with self.db.read() as session:
            found = deploy_feedback.instances_of_sets(session.connection(), env_id, names)
        if not found:
            return 0
        ctx = self.contexts(env_id)
        return hand_off(self.orchestrator, ctx, decide(ctx, found, changed))

    def deliver(
        self, pending_id: int | None, env_id: str, sets: Collection[str], changed: Collection[str] | None
    ) -> int:
        """Run one noted feedback (``lsm_deploy_feedback``), then forget its note (``pending_id``);
        returns the transfers fired. A crash in between leaves the note to the recovery pass."""
        fired = self.run(env_id, sets, changed)
        if pending_id is not None:
            with self.db.write() as session:
                deploy_feedback.finish(session.connection(), pending_id)
        return fired


def decide(
    ctx: EnvironmentContext, found: Iterable[InstanceDeploy], changed: Collection[str] | None
) -> list[Outcome]:
    """The outcomes due for ``found``: instances in a state with a resource-based transfer whose
    resources are all final (and, with ``changed``, own one of those resources)."""
    outcomes = []
    for instance in found:
        if changed is not None and not any(rid in changed for rid in instance.resource_ids):
            continue
        try:
            binding = ctx.binding(instance.entity)
            transfers = ctx.lifecycle(binding).transfers_from(instance.state)
        except LsmError:
            continue
        if not any(t.trigger == "resource_based" for t in transfers):
            continue
        success = outcome_of(instance.statuses)
        if success is None:
            continue
        failed = instance.statuses.count(ResourceStatus.FAILED)
        skipped = instance.statuses.count(ResourceStatus.SKIPPED)
        message = (
            "resources deployed" if success else f"resource deploy failed: {failed} failed, {skipped} skipped"
        )
        command = ResourceOutcome(
            instance_id=instance.instance_id,
            desired_state_version=instance.desired_state_version,
            success=success,
            message=message,
        )
        outcomes.append(Outcome(command, instance.state))
    return outcomes


__all__ = ["Feedback", "Outcome", "decide", "hand_off", "outcome_of"]
