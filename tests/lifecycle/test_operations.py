"""Attribute-set operations move the three sets as docs/semantics.md §2 says, and copy them."""

from __future__ import annotations

import copy
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsm.errors import OperationNotPossible
from lsm.lifecycle import AttributeSets, Operation, apply_operation

C = {"name": "c", "nested": {"port": 1}}
A = {"name": "a", "nested": {"port": 2}}
B = {"name": "b", "nested": {"port": 3}}

attributes = st.dictionaries(
    st.text(min_size=1, max_size=5),
    st.recursive(st.integers() | st.text(max_size=5) | st.none(), lambda inner: st.lists(inner, max_size=3)),
    max_size=4,
)
maybe = st.none() | attributes
all_sets = st.builds(AttributeSets, candidate=maybe, active=maybe, rollback=maybe)


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("promote", AttributeSets(candidate=None, active=C, rollback=A)),
        ("rollback", AttributeSets(candidate=A, active=B, rollback=None)),
        ("clear candidate", AttributeSets(candidate=None, active=A, rollback=B)),
        ("clear active", AttributeSets(candidate=C, active=None, rollback=B)),
        ("clear rollback", AttributeSets(candidate=C, active=A, rollback=None)),
    ],
)
def test_operations_move_the_sets(op: Operation, expected: AttributeSets) -> None:
    assert apply_operation(op, AttributeSets(candidate=C, active=A, rollback=B)) == expected


def test_promote_of_a_new_instance_leaves_no_rollback_set() -> None:
    assert apply_operation("promote", AttributeSets(candidate=C)) == AttributeSets(active=C)


@pytest.mark.parametrize(("op", "missing"), [("promote", "candidate"), ("rollback", "rollback")])
def test_an_operation_without_its_input_is_not_possible(op: Operation, missing: str) -> None:
    with pytest.raises(OperationNotPossible) as info:
        apply_operation(op, AttributeSets(active=A))
    assert info.value.details == {"operation": op, "missing": missing}
    assert op in info.value.message and missing in info.value.message
    assert info.value.status == 400


def test_an_unknown_operation_is_not_possible() -> None:
    with pytest.raises(OperationNotPossible, match="unknown"):
        apply_operation("demote", AttributeSets(candidate=C))  # type: ignore[arg-type]  # an unknown operation is the point


@pytest.mark.parametrize("op", get_args(Operation))
def test_clearing_an_empty_set_is_harmless(op: Operation) -> None:
    if op.startswith("clear"):
        assert apply_operation(op, AttributeSets()) == AttributeSets()


@given(sets=all_sets, op=st.sampled_from(get_args(Operation)))
def test_operations_never_mutate_nor_share_their_input(sets: AttributeSets, op: Operation) -> None:
    before = copy.deepcopy(sets)
    try:
        result = apply_operation(op, sets)
    except OperationNotPossible:
        assert sets == before
        return
    assert sets == before
    inputs = {id(d) for d in (sets.candidate, sets.active, sets.rollback) if d is not None}
    outputs = {id(d) for d in (result.candidate, result.active, result.rollback) if d is not None}
    assert not inputs & outputs
    for d in (result.candidate, result.active, result.rollback):
        if d is not None:
            d["mutated"] = True
    assert sets == before


@given(candidate=attributes, active=attributes, rollback=maybe)
def test_promote_then_rollback_restores_candidate_and_active(
    candidate: dict[str, Any], active: dict[str, Any], rollback: dict[str, Any] | None
) -> None:
    start = AttributeSets(candidate=candidate, active=active, rollback=rollback)
    back = apply_operation("rollback", apply_operation("promote", start))
    assert back == AttributeSets(candidate=candidate, active=active, rollback=None)


@given(sets=all_sets)
def test_promote_keeps_every_non_empty_set_but_the_candidate_position(sets: AttributeSets) -> None:
    if sets.candidate is None:
        return
    result = apply_operation("promote", sets)
    assert (result.candidate, result.active, result.rollback) == (None, sets.candidate, sets.active)
