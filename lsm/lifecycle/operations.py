"""Attribute-set operations: what a transfer does to an instance's candidate/active/rollback sets.

Pure functions on immutable values: the orchestrator reads the three sets from the inventory,
applies the transfer's operation here, and writes the result in the same transaction. The
result never shares a dict with the input (sets are deep-copied as they move), so a caller
that edits the result can not reach back into the row it read.

Example::

    sets = AttributeSets(candidate={"name": "a"}, active=None, rollback=None)
    apply_operation("promote", sets)
    # AttributeSets(candidate=None, active={"name": "a"}, rollback=None)
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lsm.errors import OperationNotPossible
from lsm.lifecycle.spec import Operation

Attributes = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AttributeSets:
    """An instance's three nullable attribute sets."""

    candidate: Attributes | None = None
    active: Attributes | None = None
    rollback: Attributes | None = None


def _copy(attributes: Attributes | None) -> Attributes | None:
    return None if attributes is None else copy.deepcopy(attributes)


def _require(op: str, name: str, value: Attributes | None) -> Attributes:
    if value is None:
        raise OperationNotPossible(
            f"operation {op!r} needs a {name} attribute set, and the instance has none",
            operation=op,
            missing=name,
        )
    return value


def apply_operation(op: Operation, sets: AttributeSets) -> AttributeSets:
    """The sets after ``op``; OperationNotPossible names the missing input set.

    * ``promote``: rollback <- active, active <- candidate, candidate <- none (needs a candidate)
    * ``rollback``: candidate <- active, active <- rollback, rollback <- none (needs a rollback)
    * ``clear candidate|active|rollback``: that set <- none (clearing an empty set is fine)
    """
    if op == "promote":
        candidate = _require(op, "candidate", sets.candidate)
        return AttributeSets(candidate=None, active=_copy(candidate), rollback=_copy(sets.active))
    if op == "rollback":
        rollback = _require(op, "rollback", sets.rollback)
        return AttributeSets(candidate=_copy(sets.active), active=_copy(rollback), rollback=None)
    if op == "clear candidate":
        return AttributeSets(candidate=None, active=_copy(sets.active), rollback=_copy(sets.rollback))
    if op == "clear active":
        return AttributeSets(candidate=_copy(sets.candidate), active=None, rollback=_copy(sets.rollback))
    if op == "clear rollback":
        return AttributeSets(candidate=_copy(sets.candidate), active=_copy(sets.active), rollback=None)
    raise OperationNotPossible(f"unknown attribute-set operation {op!r}", operation=op)
