"""Records and the canonical encoding: the hash decides whether a set is rewritten, so it must
be blind to order and sensitive to every value."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsm.desired_state import ExportRequest, ResourceRecord, resource_set_hash
from lsm.desired_state.records import canonical_json, decode_record, encode_record
from lsm.errors import InvalidInput


def test_requires_are_normalized_to_a_sorted_tuple_without_duplicates() -> None:
    record = ResourceRecord("A[x,k=1]", {}, ("c", "a", "c", "b"))
    assert record.requires == ("a", "b", "c")
    assert ResourceRecord("A[x,k=1]", {}, ["b", "a"]).requires == ("a", "b")  # type: ignore[arg-type]  # a list where a tuple is typed: sorted into one


def test_set_hash_ignores_record_order_and_key_order() -> None:
    one = ResourceRecord("A[x,k=1]", {"a": 1, "b": [1, 2]}, ("Z[x,k=2]", "Y[x,k=3]"))
    two = ResourceRecord("A[x,k=2]", {"z": None})
    same_one = ResourceRecord("A[x,k=1]", {"b": [1, 2], "a": 1}, ("Y[x,k=3]", "Z[x,k=2]"))
    assert resource_set_hash([one, two]) == resource_set_hash([two, same_one])


@pytest.mark.parametrize(
    "other",
    [
        ResourceRecord("A[x,k=1]", {"a": 2}),
        ResourceRecord("A[x,k=1]", {"a": 1.0}),
        ResourceRecord("A[x,k=1]", {"a": True}),
        ResourceRecord("A[x,k=1]", {"a": 1}, ("B[x,k=1]",)),
        ResourceRecord("A[x,k=9]", {"a": 1}),
    ],
)
def test_set_hash_changes_with_any_value(other: ResourceRecord) -> None:
    assert resource_set_hash([ResourceRecord("A[x,k=1]", {"a": 1})]) != resource_set_hash([other])


def test_set_hash_is_blake2b_of_the_canonical_json_of_sorted_triples() -> None:
    records = [ResourceRecord("B[x,k=é]", {"v": "ü", "a": [1, {"y": 2, "x": 1}]}, ("A[x,k=1]",))]
    records.append(ResourceRecord("A[x,k=1]", {}))
    triples = sorted([[r.id, r.attributes, list(r.requires)] for r in records])
    text = json.dumps(triples, sort_keys=True, separators=(",", ":"))
    assert resource_set_hash(records) == hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def test_encoding_round_trips_json_values() -> None:
    record = ResourceRecord(
        "A[x,k=1]", {"s": 'é\n"', "n": None, "f": 1.5, "l": [1, [2]], "d": {"b": 1}}, ("Q",)
    )
    encoded = encode_record(record)
    assert encoded.attributes_json == canonical_json(record.attributes)
    assert decode_record(record.id, encoded.attributes_json, encoded.requires_json) == record


@pytest.mark.parametrize("attributes", [{"when": object()}, {"x": float("nan")}, {"x": float("inf")}])
def test_values_json_can_not_carry_are_invalid_input_naming_the_resource(
    attributes: dict[str, object],
) -> None:
    with pytest.raises(InvalidInput) as info:
        encode_record(ResourceRecord("A[x,k=1]", attributes))
    assert "A[x,k=1]" in info.value.message
    assert info.value.details["resources"] == ["A[x,k=1]"]


def test_export_kind_is_checked() -> None:
    with pytest.raises(InvalidInput):
        ExportRequest("sometimes")  # type: ignore[arg-type]  # the wrong kind is the point


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_canonical_json_is_json_dumps_with_sorted_keys(value: object) -> None:
    # the store's encoder may take a faster path than json.dumps; it must never differ
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    assert canonical_json(value) == expected
    assert canonical_json({"v": value}) == json.dumps({"v": value}, sort_keys=True, separators=(",", ":"))


def test_a_cyclic_value_is_invalid_input() -> None:
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    with pytest.raises(InvalidInput):
        encode_record(ResourceRecord("A[x,k=1]", cyclic))
