"""Invariants: resource ids round-trip through the parser; any sequence of runs leaves exactly
what each discovery resource reported last (an id belonging to whoever reported it last)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsm.discovery import record_discovery
from lsm.model.resource_id import ResourceIdParts, parse_resource_id
from lsm.store.database import Database
from lsm.store.discovery import statements as discovery_store
from tests.desired_state import new_env

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
types = st.lists(names, min_size=1, max_size=3).map("::".join)
agents = st.from_regex(r"[^,\[\]\s\n\x00][^,\[\]\n\x00]{0,12}", fullmatch=True)
values = st.text(min_size=1, max_size=30).filter(lambda v: "\n" not in v and "\0" not in v and "\r" not in v)


@given(types, agents, names, values)
def test_an_id_built_from_parts_parses_back_to_them(
    kind: str, agent: str, attribute: str, value: str
) -> None:
    parts = ResourceIdParts(kind, agent, attribute, value)
    assert parse_resource_id(parts.id) == parts


UNIVERSE = [f"std::File[h1,path=/srv/{n}]" for n in "abcdef"]
DISCOVERIES = ["std::FileDiscovery[h1,name=one]", "std::FileDiscovery[h1,name=two]"]
runs = st.lists(
    st.tuples(st.sampled_from(DISCOVERIES), st.sets(st.sampled_from(UNIVERSE))), min_size=1, max_size=6
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs)
def test_any_sequence_of_runs_leaves_what_each_one_reported_last(
    db: Database, sequence: list[tuple[str, set[str]]]
) -> None:
    env = new_env(db)
    expected: dict[str, str] = {}  # id -> the discovery resource it belongs to
    clock = itertools.count()
    for discovery, found in sequence:
        with db.write() as session:
            at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=next(clock))
            record_discovery(session, env, discovery, "h1", {rid: {"n": rid} for rid in found}, now=at)
        expected = {rid: owner for rid, owner in expected.items() if owner != discovery or rid in found}
        expected.update(dict.fromkeys(found, discovery))
        with db.read() as session:
            stored = {r.resource_id: r.discovered_by for r in discovery_store.list_discovered(session, env)}
        assert stored == expected
