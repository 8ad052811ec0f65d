"""Automatic transfers: which one is due, and the chain of them that follows a command.

Why the chain is decided with the command: committed apart, a crash between a step and its
automatic follow-up (a worker killed after applying a validation round's outcomes, before
promoting them) left instances in a state whose auto transfer had fired for nobody. The chain
is decided in rounds after the commands, on the rows as they stepped, and committed with them.
When a step of the chain is refused (an ``LsmError``), the whole chain is taken back out of the
decision: the commands commit alone and the orchestrator fires the automatic transfers after
that commit, each in a transaction of its own, as it always did.

``due_auto`` is the one place that asks whether an automatic transfer may fire (its
``config_name`` switch, per instance, else per entity).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsm.catalog import Binding
from lsm.errors import LsmError
from lsm.lifecycle import TransferSpec
from lsm.orchestration.commands import Auto, Origin
from lsm.orchestration.context import EnvironmentContext
from lsm.store.tables import InstanceRow

if TYPE_CHECKING:
    from lsm.orchestration.decide import Decider

log = logging.getLogger(__name__)


def auto_enabled(binding: Binding, row: InstanceRow, config_name: str | None) -> bool:
    """A ``config_name`` switch: per instance, else per entity, else enabled."""
    if config_name is None:
        return True
    if config_name in (row.config or {}):
        return bool(row.config[config_name])
    return bool(binding.config.get(config_name, True))


def due_auto(ctx: EnvironmentContext, row: InstanceRow) -> TransferSpec | None:
    """The auto transfer of the state ``row`` is in, if there is one and it is switched on."""
    binding = ctx.binding(row.entity)
    transfer = ctx.machine(binding).auto_transfer(row.state)
    if transfer is None or not auto_enabled(binding, row, transfer.config_name):
        return None
    return transfer


def auto_command(ctx: EnvironmentContext, row: InstanceRow) -> Auto | None:
    """The ``Auto`` command that fires ``row``'s auto transfer now (a validating one waits for
    its compile instead)."""
    transfer = due_auto(ctx, row)
    if transfer is None or transfer.validate:
        return None
    return Auto(instance_id=row.id, expected_version=row.version)


def follow_ups(
    ctx: EnvironmentContext, rows: list[InstanceRow], executed: list[bool]
) -> list[tuple[int, Auto]]:
    """The auto transfers due after a round: (row index, command)."""
    return [
        (i, command)
        for i, row in enumerate(rows)
        if executed[i] and (command := auto_command(ctx, row)) is not None
    ]


def run_round(
    d: Decider, follow: list[tuple[int, Auto]], rows: list[InstanceRow], origins: list[Origin]
) -> list[bool]:
    """Decide one round of auto transfers (read together first), each with its row's origin;
    ``rows`` are updated in place; which rows took a step."""
    executed = [False] * len(rows)
    d.prefetch(command.instance_id for _, command in follow)
    for i, command in follow:
        d.origin = origins[i]
        outcome = d.run(command)
        if outcome.executed:
            rows[i], executed[i] = outcome.instance, True
    return executed


def decide_chain(d: Decider, rows: list[InstanceRow], executed: list[bool], origins: list[Origin]) -> bool:
    """Decide the auto transfers that follow ``rows`` (updated in place), in rounds, each row's
    steps with its own origin. False when a step was refused: the chain is then taken back out
    of the decision and the rows are as the commands left them."""
    follow = follow_ups(d.ctx, rows, executed)
    if not follow:
        return True
    before = list(rows)
    d.decision.mark()
    try:
        while follow:
            executed = run_round(d, follow, rows, origins)
            follow = follow_ups(d.ctx, rows, executed)
    except LsmError:
        log.warning("an automatic transfer was refused; firing them after the commit", exc_info=True)
        d.decision.undo_to_mark()
        rows[:] = before
        return False
    d.decision.keep()
    return True
