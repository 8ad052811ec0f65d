"""Deciding one command or a batch of them, with the automatic transfers that follow.

Why apart from the orchestrator: these are the decisions every entry point takes, on a read
snapshot or in a write transaction alike (``Orchestrator`` chooses where, ``commit`` writes).
A batch is all or nothing: every command is decided (a refused one does not stop the others
from being checked), and when any is refused one error names every refused item
(``lsm.orchestration.batch``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lsm.errors import IdentityConflict, LsmError
from lsm.orchestration.batch import ItemError, batch_error, positions
from lsm.orchestration.chain import decide_chain
from lsm.orchestration.commands import (
    Auto,
    Command,
    ExportFailed,
    Origin,
    ResourceOutcome,
    Update,
    ValidationOutcome,
)
from lsm.orchestration.decide import Decider
from lsm.orchestration.decision import Outcome
from lsm.store.tables import InstanceRow


@dataclass
class Decided:
    """What deciding a batch gave: the rows after it (in command order), which took a step,
    their follow-up origins, and whether the chain of auto transfers is complete."""

    rows: list[InstanceRow]
    executed: list[bool]
    follow_ups: list[Origin]
    chained: bool


def decide_one(d: Decider, command: Command, *, chain: bool = True) -> tuple[Outcome, bool]:
    """Decide ``command`` and, when ``chain``, the auto transfers after it. The outcome of the
    last step and whether the chain is complete."""
    outcome = d.run(command)
    if not chain:
        return outcome, True
    rows = [outcome.instance]
    complete = decide_chain(d, rows, [outcome.executed], [outcome.origin.follow_up()])
    if not complete:
        return outcome, False
    return Outcome(rows[0], outcome.executed, d.decision.compile_ids, outcome.origin), True


def decide_many(d: Decider, commands: list[Command], origin: Origin) -> Decided:
    """Decide every command and the auto transfers that follow; refused items are raised as
    one error (``batch_error``)."""
    d.prefetch(
        c.instance_id
        for c in commands
        if isinstance(c, Auto | ValidationOutcome | ResourceOutcome | ExportFailed)
    )
    failures: list[ItemError] = []
    outcomes: list[Outcome] = []
    created: dict[str, int] = {}
    for (op, index), command in zip(positions(commands), commands, strict=True):
        d.origin = origin  # a validation outcome adopts its compile's request id
        try:
            outcome = d.run(command)
        except LsmError as exc:
            ref = command.ref if isinstance(command, Update) else None
            failures.append(ItemError(op, index, _within_batch(exc, created), ref))
            continue
        outcomes.append(outcome)
        if op == "create":
            created[outcome.instance.id] = index
    if failures:
        raise batch_error(failures, len(commands))
    rows = [outcome.instance for outcome in outcomes]
    executed = [o.executed for o in outcomes]
    follow_ups = [o.origin.follow_up() for o in outcomes]
    return Decided(rows, executed, follow_ups, decide_chain(d, rows, executed, follow_ups))


def _within_batch(error: LsmError, created: dict[str, int]) -> LsmError:
    """An identity clash with an instance created earlier in the same batch names that item."""
    if isinstance(error, IdentityConflict) and error.details.get("instance") in created:
        error.details["clashes_with"] = {"op": "create", "index": created[error.details["instance"]]}
    return error
