"""``record_discovery``: a run replaces that discovery resource's results, bad output writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.discovery import check_discovery_output, record_discovery
from lsm.errors import InvalidDiscoveryOutput, InvalidInput
from lsm.store.database import Database
from lsm.store.discovery import statements as store
from tests.desired_state import new_env

DISCOVERY = "std::FileDiscovery[agent1,name=etc]"
OTHER_DISCOVERY = "std::FileDiscovery[agent1,name=var]"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rid(name: str, agent: str = "agent1") -> str:
    return f"std::File[{agent},path=/srv/{name}]"


def record(db: Database, env: str, found: dict[str, Any], *, by: str = DISCOVERY, at: datetime = T0) -> Any:
    with db.write() as session:
        return record_discovery(session, env, by, "agent1", found, now=at)


def listing(db: Database, env: str, **filters: Any) -> dict[str, store.DiscoveredRow]:
    with db.read() as session:
        return {row.resource_id: row for row in store.list_discovered(session, env, **filters)}


@pytest.fixture
def env(db: Database) -> str:
    return new_env(db)


def test_a_run_replaces_what_the_same_discovery_resource_found_before(db: Database, env: str) -> None:
    first = record(db, env, {rid("a"): {"v": 1}, rid("b"): {"v": 2}, rid("c"): {"v": 3}})
    assert (first.found, first.added, first.kept, first.removed) == (3, 3, 0, [])
    later = T0 + timedelta(minutes=5)
    second = record(db, env, {rid("a"): {"v": 10}, rid("c"): {"v": 3}, rid("d"): {"v": 4}}, at=later)
    assert (second.added, second.kept, second.removed) == (1, 2, [rid("b")])
    rows = listing(db, env)
    assert sorted(rows) == [rid("a"), rid("c"), rid("d")]
    assert rows[rid("a")].attributes == {"v": 10}
    assert rows[rid("a")].first_seen == T0 and rows[rid("a")].last_seen == later
    assert rows[rid("d")].first_seen == later
    assert rows[rid("a")].resource_type == "std::File" and rows[rid("a")].agent == "agent1"
    assert rows[rid("a")].discovered_by == DISCOVERY and rows[rid("a")].discovery_agent == "agent1"
    # an empty run removes everything it found
    assert record(db, env, {}, at=later).removed == [rid("a"), rid("c"), rid("d")]
    assert listing(db, env) == {}


def test_another_discovery_resource_keeps_its_own_results(db: Database, env: str) -> None:
    record(db, env, {rid("a"): 1, rid("b"): 2})
    record(db, env, {rid("x"): 1}, by=OTHER_DISCOVERY)
    record(db, env, {rid("a"): 1})
    assert sorted(listing(db, env)) == [rid("a"), rid("x")]
    assert sorted(listing(db, env, discovered_by=OTHER_DISCOVERY)) == [rid("x")]


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"not an id": 1}, "not an id"),
        ({"std::File[agent1]": 1}, "std::File[agent1]"),
        ({"std::File[agent1,path=]": 1}, "std::File[agent1,path=]"),
        ({rid("ok"): 1, rid("set"): {1, 2}}, rid("set")),
        ({rid("nan"): float("nan")}, rid("nan")),
        ({rid("obj"): object()}, rid("obj")),
    ],
)
def test_bad_output_raises_naming_the_entry_and_keeps_the_previous_results(
    db: Database, env: str, bad: dict[str, Any], named: str
) -> None:
    record(db, env, {rid("a"): {"v": 1}, rid("b"): {"v": 2}})
    before = listing(db, env)
    with pytest.raises(InvalidDiscoveryOutput) as caught:
        record(db, env, {rid("c"): 3, **bad}, at=T0 + timedelta(hours=1))
    assert named in caught.value.message
    assert listing(db, env) == before


def test_output_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(InvalidDiscoveryOutput):
        check_discovery_output([rid("a")])


def test_a_discovery_resource_id_that_is_not_an_id_is_refused(db: Database, env: str) -> None:
    with pytest.raises(InvalidInput, match="discovery_resource_id"):
        record(db, env, {rid("a"): 1}, by="nonsense")


class Unmanaged(BaseModel):
    host: str
    interface_name: str
    ip_address: str | None = None


def test_pydantic_attributes_are_stored_as_their_json_dump(db: Database, env: str) -> None:
    found = {
        "linux::Interface[h1,name=eth0]": Unmanaged(host="h1", interface_name="eth0", ip_address="10.0.0.1")
    }
    record(db, env, found)
    row = listing(db, env)["linux::Interface[h1,name=eth0]"]
    assert row.attributes == {"host": "h1", "interface_name": "eth0", "ip_address": "10.0.0.1"}
    assert row.resource_type == "linux::Interface" and row.agent == "h1"


def test_ids_with_separators_in_the_value_round_trip(db: Database, env: str) -> None:
    odd = "std::HttpObject[api,url=http://127.0.0.1:8080/items?a=1,b=[2]]"
    record(db, env, {odd: {"k": "v"}})
    with db.read() as session:
        row = store.get_discovered(session, env, odd)
    assert row is not None and row.agent == "api" and row.resource_type == "std::HttpObject"


def test_results_are_scoped_per_environment(db: Database, env: str) -> None:
    other = new_env(db)
    record(db, env, {rid("a"): 1})
    record(db, other, {rid("b"): 2})
    assert sorted(listing(db, env)) == [rid("a")]
    assert sorted(listing(db, other)) == [rid("b")]
    # the same discovery resource in another environment replaces only its own results there
    record(db, other, {})
    assert sorted(listing(db, env)) == [rid("a")]


def test_managed_is_whether_the_id_is_in_the_newest_desired_state(db: Database, env: str) -> None:
    desired = DesiredStateStore(db)
    desired.export(
        env, ExportRequest("full", sets={"set-1": [ResourceRecord(rid("a"), {"agent": "agent1"})]})
    )
    record(db, env, {rid("a"): 1, rid("b"): 2})
    rows = listing(db, env)
    assert rows[rid("a")].managed and not rows[rid("b")].managed
    assert sorted(listing(db, env, managed=True)) == [rid("a")]
    assert sorted(listing(db, env, managed=False)) == [rid("b")]
    # a newer version without it: no longer managed; one with b: b is
    desired.export(
        env, ExportRequest("full", sets={"set-1": [ResourceRecord(rid("b"), {"agent": "agent1"})]})
    )
    rows = listing(db, env)
    assert not rows[rid("a")].managed and rows[rid("b")].managed
    # another environment's desired state says nothing of this one
    other = new_env(db)
    desired.export(other, ExportRequest("full", sets={"s": [ResourceRecord(rid("a"), {"agent": "agent1"})]}))
    assert not listing(db, env)[rid("a")].managed


def test_filters_and_paging_in_a_stable_id_order(db: Database, env: str) -> None:
    found: dict[str, Any] = {rid(f"f{i:02}", agent=f"agent{i % 2}"): i for i in range(25)}
    found["std::Dir[agent0,path=/srv]"] = {}
    record(db, env, found)
    everything = list(listing(db, env, limit=1000))
    assert everything == sorted(everything)
    pages = [list(listing(db, env, limit=10, offset=o)) for o in (0, 10, 20)]
    assert [rid for page in pages for rid in page] == everything
    assert all(r.startswith("std::File[agent1,") for r in listing(db, env, agent="agent1"))
    assert len(listing(db, env, agent="agent1")) == 12
    assert list(listing(db, env, resource_type="std::Dir")) == ["std::Dir[agent0,path=/srv]"]


def test_results_survive_a_new_database_object(db: Database, env: str, tmp_path: Path) -> None:
    record(db, env, {rid("a"): {"v": 1}})
    again = Database(db.url, schema=db.schema)
    try:
        again.create_schema()
        assert sorted(listing(again, env)) == [rid("a")]
    finally:
        again.dispose()
