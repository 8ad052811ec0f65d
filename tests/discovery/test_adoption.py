"""Adoption through the real app: discovered files become ``managed_file`` instances of the example.

The engine runs ``examples/discovery`` (its ``adoptable`` lifecycle: adopted -> creating) on the
test database of each backend, served by uvicorn on 127.0.0.1; discovered results are stored
with ``record_discovery`` from a real run of the bundled file discovery handler.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.discovery import record_discovery
from lsm.orchestration import ForceState
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from lsm.testing import served_url
from tests.discovery import plant_files, run_file_discovery

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discovery"
AGENT = "host1"
FILES = {"motd": "hello\n", "issue": "Welcome\n", "hosts.conf": "127.0.0.1 localhost\n"}


def make_engine(db: Database, *, embedded_worker: bool) -> ApiRuntime:
    config = ServerConfig(
        database_url=db.url,
        model=str(EXAMPLE),
        lifecycle_dirs=[str(EXAMPLE)],
        embedded_worker=embedded_worker,
        settings={"partial_compiles": False},
    )
    engine = build_api(config, db=db)
    engine.start()
    return engine


@pytest.fixture
def engine(db: Database) -> Iterator[ApiRuntime]:
    engine = make_engine(db, embedded_worker=False)
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture
def http(engine: ApiRuntime) -> Iterator[httpx.Client]:
    with served_url(engine) as base, httpx.Client(base_url=base, timeout=60) as client:
        yield client


def env_id(http: httpx.Client, name: str = "default") -> str:
    answer = http.get(f"/api/v1/environments/{name}")
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def discover(db: Database, env: str, directory: Path) -> dict[str, Any]:
    """Plant ``FILES`` and record one run of the file discovery over them; ``{id: attributes}``."""
    plant_files(directory, FILES, agent=AGENT)
    discovery_id, found = run_file_discovery(directory, agent=AGENT)
    with db.write() as session:
        record_discovery(session, env, discovery_id, AGENT, found, now=datetime.now(UTC))
    return {rid: value.model_dump() for rid, value in found.items()}  # type: ignore[attr-defined]  # found values are DiscoveredResource models


def instance_count(http: httpx.Client) -> int:
    return len(http.get("/lsm/v1/service_inventory/managed_file").json())


def file_ids(found: dict[str, Any]) -> list[str]:
    return sorted(found)


def test_two_discovered_files_are_adopted_into_instances_with_an_adopt_line(
    db: Database, http: httpx.Client, tmp_path: Path
) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    listed = http.get("/api/v1/discovered").json()
    assert [row["id"] for row in listed] == file_ids(found)
    assert not any(row["managed"] or row["adopted_by"] for row in listed)
    first, second, third = file_ids(found)

    answer = http.post(
        "/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [first, second]}
    )
    assert answer.status_code == 200, answer.text
    instances = answer.json()
    assert len(instances) == 2
    for instance, rid in zip(instances, (first, second), strict=True):
        # adopted -> creating (auto, promote): the discovered file is now the active attributes
        assert instance["state"] == "creating"
        assert instance["active_attributes"] == {
            "host": AGENT,
            "path": found[rid]["path"],
            "content": found[rid]["content"],
            "mode": found[rid]["mode"],
        }
        log = http.get(f"/lsm/v1/service_inventory/managed_file/{instance['id']}/log").json()
        assert [(e["source"], e["target"], e["trigger"]) for e in log] == [
            (None, "adopted", "adopt"),
            ("adopted", "creating", "auto"),
        ]
        assert rid in log[0]["message"]
        row = http.get(f"/api/v1/discovered/{rid}").json()
        assert row["adopted_by"] == instance["id"] and row["adopted_entity"] == "managed_file"
    assert [r["id"] for r in http.get("/api/v1/discovered", params={"adopted": "false"}).json()] == [third]


def test_adopting_an_adopted_resource_is_a_409_naming_it_and_writes_nothing(
    db: Database, http: httpx.Client, tmp_path: Path
) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    first, _, third = file_ids(found)
    assert http.post(
        "/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [first]}
    ).is_success
    before = http.get("/api/v1/discovered").json()

    answer = http.post(
        "/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [third, first]}
    )
    assert answer.status_code == 409, answer.text
    assert answer.json()["resource_id"] == first and first in answer.json()["message"]
    assert instance_count(http) == 1
    assert http.get("/api/v1/discovered").json() == before  # `third` was not adopted either
    assert list(answer.json()["refused"]) == [first]
    # every refused id is listed, in the order asked
    assert http.post(
        "/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [third]}
    ).is_success
    both = http.post("/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [third, first]})
    assert both.status_code == 409 and list(both.json()["refused"]) == [third, first]
    assert "and 1 more" in both.json()["message"]


def test_adopting_a_managed_resource_is_a_409_naming_it(
    db: Database, http: httpx.Client, tmp_path: Path
) -> None:
    env = env_id(http)
    found = discover(db, env, tmp_path / "srv")
    first, second, _ = file_ids(found)
    DesiredStateStore(db).export(
        env,
        ExportRequest("full", sets={}, shared=[ResourceRecord(second, {"agent": AGENT, **found[second]})]),
    )
    assert http.get(f"/api/v1/discovered/{second}").json()["managed"] is True
    answer = http.post(
        "/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [first, second]}
    )
    assert answer.status_code == 409, answer.text
    assert answer.json()["resource_id"] == second and "managed" in answer.json()["message"]
    assert instance_count(http) == 0
    assert http.get(f"/api/v1/discovered/{first}").json()["adopted_by"] is None


@pytest.mark.parametrize(
    ("entity", "ids", "status", "named"),
    [
        ("managed_file", ["std::File[host1,path=/nowhere]"], 404, "std::File[host1,path=/nowhere]"),
        ("managed_file", ["not-an-id"], 422, "not-an-id"),
        ("file_discovery", None, 422, "declares no adoption"),
        ("no_such_entity", None, 404, "no_such_entity"),
    ],
)
def test_refused_adoptions_name_what_is_wrong_and_write_nothing(
    db: Database,
    http: httpx.Client,
    tmp_path: Path,
    entity: str,
    ids: list[str] | None,
    status: int,
    named: str,
) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    answer = http.post(
        f"/lsm/v1/service_inventory/{entity}/adopt", json={"discovered_ids": ids or file_ids(found)[:1]}
    )
    assert answer.status_code == status, answer.text
    assert named in answer.json()["message"]
    assert instance_count(http) == 0


def test_a_duplicate_or_empty_id_list_is_refused(db: Database, http: httpx.Client, tmp_path: Path) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    rid = file_ids(found)[0]
    assert (
        http.post(
            "/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [rid, rid]}
        ).status_code
        == 422
    )
    assert (
        http.post("/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": []}).status_code
        == 422
    )
    assert instance_count(http) == 0


def test_discovered_routes_filter_page_and_stay_in_their_environment(
    db: Database, http: httpx.Client, tmp_path: Path
) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    ids = file_ids(found)
    assert [r["id"] for r in http.get("/api/v1/discovered", params={"limit": 2}).json()] == ids[:2]
    assert [r["id"] for r in http.get("/api/v1/discovered", params={"limit": 2, "offset": 2}).json()] == ids[
        2:
    ]
    assert len(http.get("/api/v1/discovered", params={"type": "std::File", "agent": AGENT}).json()) == 3
    assert http.get("/api/v1/discovered", params={"agent": "elsewhere"}).json() == []
    assert http.get("/api/v1/discovered", params={"managed": "true"}).json() == []
    assert http.get("/api/v1/discovered", params={"limit": 0}).status_code == 422
    for path in (quote(ids[0], safe=""), ids[0]):  # fully percent-encoded, or as it is
        one = http.get(f"/api/v1/discovered/{path}")
        assert one.status_code == 200, path
        assert one.json()["attributes"] == found[ids[0]]
    assert http.get("/api/v1/discovered/std::File[host1,path=/none]").status_code == 404
    # another environment's header sees none of them
    assert http.post("/api/v1/environments", json={"name": "other"}).status_code in (200, 201)
    assert http.get("/api/v1/discovered", headers={"X-LSM-Environment": "other"}).json() == []
    other = http.get(f"/api/v1/discovered/{ids[0]}", headers={"X-LSM-Environment": "other"})
    assert other.status_code == 404


def test_the_client_and_a_restarted_server_see_the_same_results(db: Database, tmp_path: Path) -> None:
    from lsm.client import Client

    engine = make_engine(db, embedded_worker=False)
    try:
        with served_url(engine) as base, Client(base) as client:
            env = str(client.get_environment()["id"])
            found = discover(db, env, tmp_path / "srv")
            rid = file_ids(found)[0]
            assert client.discovered_resource(rid)["id"] == rid
            adopted = client.adopt("managed_file", [rid])
            assert len(adopted) == 1
    finally:
        engine.stop()
    again = make_engine(db, embedded_worker=False)
    try:
        with served_url(again) as base, Client(base) as client:
            rows = client.discovered(managed=False)
            assert [r["id"] for r in rows] == file_ids(found)
            assert client.discovered_resource(rid)["adopted_by"] == adopted[0]["id"]
    finally:
        again.stop()


def test_two_concurrent_adoptions_of_one_id_end_in_one_instance_and_one_409(
    db: Database, http: httpx.Client, tmp_path: Path
) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    rid = file_ids(found)[0]
    barrier = threading.Barrier(2)

    def adopt() -> httpx.Response:
        with httpx.Client(base_url=str(http.base_url), timeout=60) as client:
            barrier.wait(timeout=30)
            return client.post("/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [rid]})

    with ThreadPoolExecutor(2) as pool:
        answers = [f.result() for f in [pool.submit(adopt), pool.submit(adopt)]]
    assert sorted(a.status_code for a in answers) == [200, 409], [a.text for a in answers]
    assert instance_count(http) == 1
    adopted_by = http.get(f"/api/v1/discovered/{rid}").json()["adopted_by"]
    winner = next(a for a in answers if a.status_code == 200).json()[0]["id"]
    assert adopted_by == winner


def test_a_resource_whose_adopting_instance_was_deleted_may_be_adopted_again(
    db: Database, engine: ApiRuntime, http: httpx.Client, tmp_path: Path
) -> None:
    found = discover(db, env_id(http), tmp_path / "srv")
    rid = file_ids(found)[0]
    first = http.post("/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [rid]}).json()[
        0
    ]
    env = engine.core.environments.context(None)
    engine.core.orchestrator.execute(
        env, ForceState("managed_file", first["id"], first["version"], "terminated", message="gone")
    )
    assert http.get(f"/api/v1/discovered/{rid}").json()["adopted_by"] is None
    again = http.post("/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": [rid]})
    assert again.status_code == 200, again.text
    assert http.get(f"/api/v1/discovered/{rid}").json()["adopted_by"] == again.json()[0]["id"] != first["id"]
