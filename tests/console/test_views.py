"""``lsm.api.console.views``: the side-by-side rows, form parsing and the 409 story, as invariants."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lsm.api.console.views import attribute_values, conflict_story, field_text, side_by_side
from lsm.errors import InvalidAttributes
from lsm.schemas.catalog import AttributeOut
from lsm.schemas.inventory import EventOut, InstanceOut

NOW = datetime(2026, 1, 1, tzinfo=UTC)
names = st.sampled_from(["a", "b", "c", "d"])
values = st.one_of(st.integers(0, 3), st.sampled_from(["", "x", None, True]), st.just([1, 2]))
sets = st.one_of(st.none(), st.dictionaries(names, values, max_size=4))


def instance(candidate: Any, active: Any, rollback: Any, version: int = 1) -> InstanceOut:
    return InstanceOut(
        id="i",
        service_entity="e",
        version=version,
        desired_state_version=0,
        state="up",
        candidate_attributes=candidate,
        active_attributes=active,
        rollback_attributes=rollback,
        deleted=False,
        created_at=NOW,
        last_updated=NOW,
        owner=None,
    )


@given(sets, sets, sets)
def test_side_by_side_has_a_row_per_attribute_and_marks_exactly_what_differs_from_active(
    candidate: Any, active: Any, rollback: Any
) -> None:
    rows = side_by_side(instance(candidate, active, rollback))
    every = [s for s in (candidate, active, rollback)]
    assert [r.name for r in rows] == sorted({k for s in every if s for k in s})
    for row in rows:
        for column, raw in enumerate(every):
            if raw is None:
                assert row.values[column] is None and not row.differs[column]
                continue
            shown = row.values[column]
            assert shown == (json.dumps(raw[row.name], sort_keys=True) if row.name in raw else "(not set)")
            if active is not None:
                assert row.differs[column] == (raw.get(row.name, "∅") != active.get(row.name, "∅"))
        assert not row.differs[1]


def attr(name: str, kind: str) -> AttributeOut:
    return AttributeOut(name=name, type=kind, modifier="rw+", required=False)


@given(
    st.one_of(
        st.integers(),
        st.booleans(),
        st.lists(st.integers(), max_size=3),
        st.text(alphabet='ab 1["', max_size=5),
    )
)
def test_a_value_shown_in_a_field_parses_back_to_itself(value: Any) -> None:
    kind = "str" if isinstance(value, str) else "Any"
    attribute = attr("x", kind)
    text = field_text(attribute, value)
    if text.strip() == "":
        return  # an empty field means "leave it": nothing is sent
    assert attribute_values({"attr.x": text}, [attribute]) == {"x": value}


def test_bad_fields_are_named_together() -> None:
    with pytest.raises(InvalidAttributes) as caught:
        attribute_values({"attr.n": "many", "attr.zz": "1", "other": "x"}, [attr("n", "int")])
    assert {e["path"] for e in caught.value.errors} == {"n", "zz"}


def event(version: int, actor: str | None) -> EventOut:
    return EventOut(
        id=version,
        instance_id="i",
        version=version,
        source="a",
        target="b",
        trigger="auto",
        message="",
        compile_id=None,
        is_error=False,
        created_at=NOW,
        actor=actor,
    )


def test_the_conflict_names_the_last_client_not_the_engine_and_what_changed() -> None:
    log = [event(1, "alice"), event(2, "system"), event(3, "bob"), event(4, "system")]
    story = conflict_story(
        2, instance({"x": 2, "y": 1}, None, None, version=4), log, {"x": 1, "y": 1}, {"x": 5}
    )
    assert (story.had, story.now, story.actor) == (2, 4, "bob")
    assert [e.version for e in story.steps] == [3, 4]
    assert story.changed == [("x", "1", "2")]
    engine_only = conflict_story(3, instance({"x": 2}, None, None, version=4), log, None, {})
    assert engine_only.actor == "system" and engine_only.changed == []
