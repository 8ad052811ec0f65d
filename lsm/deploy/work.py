"""``Job``: a piece of the agent's work that is not a deploy batch (a plan, a recovery pass).

Why work of the service loop and not a step inside the claim: a claim only claims. Planning a
new version and finishing what a dead holder left are jobs of their own, claimed from sources of
their own (``lsm.deploy.planner.Planning``, ``lsm.deploy.recovery.RecoveryPasses``), so the loop
runs them on a runner thread like any work and a failure of one never stops a claim.
"""

from __future__ import annotations

from collections.abc import Callable


class Job:
    """One call run as work of the service loop (satisfies ``lsm.services.loop.Work``)."""

    def __init__(self, label: str, action: Callable[[], object]) -> None:
        self.label = label
        self.action = action

    def run(self) -> None:
        self.action()

    def deadline(self) -> float | None:
        return None  # each step bounds itself (leases, transactions)

    def expire(self) -> None:
        pass


__all__ = ["Job"]
