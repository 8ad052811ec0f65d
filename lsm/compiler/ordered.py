"""Which instances enter a validation compile because they were ordered with the validated one.

Why apart from ``lsm.compiler.validation``: it is one rule of docs/semantics.md §3 ("Ordered
together, validated together"), read from the lifecycles; the batching of validations does not
depend on how it is decided. An instance the validated one depends on (its owner, what it
refers to, walked up the relations) that still waits for its own validation contributes its
``validate_self`` set (its candidate) instead of its ``validate_others`` set (none, in
``start``): a port ordered with its router is validated with the router.
"""

from __future__ import annotations

from lsm.lifecycle import LifecycleSpec
from lsm.orchestration import EnvironmentContext
from lsm.selection import InventoryView


def ordered_with(snapshot: InventoryView, ctx: EnvironmentContext, validated: str) -> set[str]:
    """The instances ``validated`` depends on (its owner, what it refers to, and theirs, walked
    up the relations) that still wait for their own validation: they enter its compile with
    their candidates. Never the instances that depend on it, nor its siblings: a port's
    compile holds the router ordered with it, not the other ports ordered beside it (each port
    is still validated as if alone against the ports before it)."""
    found: set[str] = set()
    frontier = [validated]
    while frontier:
        targets = (
            {r.target_id for rels in snapshot.references_from_many(frontier).values() for r in rels}
            - found
            - {validated}
        )
        frontier = []
        for record in snapshot.get_many(targets).values():
            lifecycle = ctx.lifecycle(ctx.binding(record.entity))
            state = lifecycle.state(record.state)
            if state.validate_others is None and _validating(lifecycle, record.state):
                found.add(record.id)
                frontier.append(record.id)
    return found


def _validating(lifecycle: LifecycleSpec, state: str) -> bool:
    """Whether an instance in ``state`` still waits for its own validation (an ``auto``
    transfer with ``validate`` leaves the state): an owner or a related instance ordered with
    the validated one, not one whose candidate was rejected."""
    return any(t.trigger == "auto" and t.validate for t in lifecycle.transfers_from(state))
