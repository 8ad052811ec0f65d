"""Deploy outcomes in batches: the resource-based transfers of many instances in one commit.

Why: a deploy agent learns of many instances' outcomes at once (every instance whose resources
a batch of results completed). Taken one by one, each was a write transaction of its own
(decided, locked, committed), and on SQLite each waited for the write lock that the API and the
compile workers share. Like a validation round's outcomes (``lsm.compiler.validation``), they
are decided together on a read snapshot and committed in one transaction
(``Orchestrator.execute_many``), with the automatic transfers that follow them.

A batch is all or nothing; an outcome refused in it (an instance removed meanwhile, a lifecycle
that changed) must not hold the others back, so a refused batch is applied again one outcome
at a time, and each refusal is that outcome's own answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsm.errors import LsmError
from lsm.orchestration.batch import MAX_BATCH
from lsm.orchestration.commands import ResourceOutcome
from lsm.orchestration.context import EnvironmentContext
from lsm.orchestration.orchestrator import Orchestrator
from lsm.store.tables import InstanceRow


def apply_resource_outcomes(
    orchestrator: Orchestrator, ctx: EnvironmentContext, outcomes: Sequence[ResourceOutcome]
) -> list[InstanceRow | LsmError]:
    """Apply ``outcomes`` in batches; per outcome, in order, the instance after it or the error
    that refused it."""
    answers: list[InstanceRow | LsmError] = []
    for start in range(0, len(outcomes), MAX_BATCH):
        chunk = list(outcomes[start : start + MAX_BATCH])
        try:
            answers.extend(orchestrator.execute_many(ctx, list(chunk)))
        except LsmError:
            answers.extend(_one_by_one(orchestrator, ctx, chunk))
    return answers


def _one_by_one(
    orchestrator: Orchestrator, ctx: EnvironmentContext, outcomes: list[ResourceOutcome]
) -> list[InstanceRow | LsmError]:
    answers: list[InstanceRow | LsmError] = []
    for outcome in outcomes:
        try:
            answers.append(orchestrator.execute(ctx, outcome))
        except LsmError as exc:
            answers.append(exc)
    return answers
