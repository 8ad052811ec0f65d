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

Firing twice for one outcome is harmless: a self transfer with no operation (``up -> up``) is
not executed (no version bump, no event line, no compile), and a transfer already taken leaves
the instance in a state where the outcome fires nothing new. The actor is ``system``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable

from lsm.errors import LsmError
from lsm.inventory import deploy_feedback
from lsm.inventory.database import Database
from lsm.orchestration import EnvironmentContext, Orchestrator, apply_resource_outcomes
from lsm.orchestration.commands import ResourceOutcome

log = logging.getLogger(__name__)


def outcome_of(statuses: Iterable[str]) -> bool | None:
    """``True``: all deployed (or none); ``False``: all final, one failed or skipped; ``None``: wait."""
    seen = list(statuses)
    if any(s not in ("deployed", "failed", "skipped") for s in seen):
        return None
    return all(s == "deployed" for s in seen)


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
        outcomes: list[ResourceOutcome] = []
        before: list[str] = []
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
            failed, skipped = instance.statuses.count("failed"), instance.statuses.count("skipped")
            message = (
                "resources deployed"
                if success
                else f"resource deploy failed: {failed} failed, {skipped} skipped"
            )
            outcomes.append(
                ResourceOutcome(
                    instance_id=instance.instance_id,
                    desired_state_version=instance.desired_state_version,
                    success=success,
                    message=message,
                )
            )
            before.append(instance.state)
        fired = 0
        answers = apply_resource_outcomes(self.orchestrator, ctx, outcomes) if outcomes else []
        for outcome, state, answer in zip(outcomes, before, answers, strict=True):
            if isinstance(answer, LsmError):
                log.warning("deploy outcome of instance %s not applied: %s", outcome.instance_id, answer)
            else:
                fired += answer.state != state
        return fired


__all__ = ["Feedback", "outcome_of"]
