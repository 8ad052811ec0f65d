"""``/api/v1/resources`` and ``/api/v1/deploy`` through the real app (uvicorn on 127.0.0.1), on both
backends, over deploy tables seeded as the engine would leave them; the dry run runs real
handlers (tests/deploy/filemodel.py) against real files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lsm.desired_state import ExportRequest, ResourceRecord
from lsm.facade import RequestContext
from lsm.facade.deploy import DeployFacade
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.deploy import DeployRequest
from lsm.testing import served_url
from tests.deploy import filemodel
from tests.deploy.seed import rid, seed_actions, seed_desired, seed_instance, seed_states, state

MODEL = "tests.deploy.filemodel"
#: a resource id with every character a route must carry: [ , = : and /
ODD = "std::File[h1:x,path=/etc/lsm,a=b:c/motd]"


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    return engine_factory(MODEL)


@pytest.fixture
def http(engine: ApiRuntime) -> Iterator[httpx.Client]:
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def env_id(engine: ApiRuntime) -> str:
    return engine.context(None).env_id


def seed_fleet(engine: ApiRuntime) -> None:
    seed_states(
        engine.db,
        env_id(engine),
        [
            state(rid("net::Host", "a1", "h1")),
            state(rid("net::Host", "a1", "h2"), status="failed", last_error="unreachable", attempts=3),
            state(rid("net::Port", "a2", "p1"), status="skipped", requires=[rid("net::Host", "a1", "h2")]),
            state(rid("net::Port", "a2", "p2"), status="pending"),
            state(ODD),
        ],
    )


# -- listing ------------------------------------------------------------------------------------------
def test_resources_are_listed_in_id_order_with_filters_and_pages(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    seed_fleet(engine)

    everything = http.get("/api/v1/resources").json()
    ids = [r["id"] for r in everything]
    assert ids == sorted(ids) and len(ids) == 5
    failed = http.get("/api/v1/resources", params={"status": "failed"}).json()
    assert [(r["id"], r["last_error"], r["attempts"]) for r in failed] == [
        (rid("net::Host", "a1", "h2"), "unreachable", 3)
    ]
    assert [r["id"] for r in http.get("/api/v1/resources", params={"agent": "a2"}).json()] == [
        rid("net::Port", "a2", "p1"),
        rid("net::Port", "a2", "p2"),
    ]
    assert len(http.get("/api/v1/resources", params={"type": "net::Host"}).json()) == 2
    pages = [
        r["id"]
        for offset in (0, 2, 4)
        for r in http.get("/api/v1/resources", params={"limit": 2, "offset": offset}).json()
    ]
    assert pages == ids
    assert everything[0]["attributes"] is None  # the list stays cheap: attributes on the one-resource route


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"status": "broken"}, "status"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"offset": -1}, "offset"),
    ],
)
def test_bad_filter_values_are_422_naming_the_field(
    http: httpx.Client, params: dict[str, Any], field: str
) -> None:
    response = http.get("/api/v1/resources", params=params)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_input"
    assert [(e["in"], e["path"]) for e in body["errors"]] == [("query", field)]


# -- one resource and its actions ----------------------------------------------------------------------
def test_a_resource_id_with_brackets_commas_equals_colons_and_slashes_is_routable(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    seed_fleet(engine)
    with engine.db.write() as session:
        seed_desired(
            session, env_id(engine), ODD, {"agent": "h1:x", "path": "/etc/lsm,a=b:c/motd", "content": "hi"}
        )
    seed_actions(engine.db, env_id(engine), ODD, ["create", "none"])

    encoded = http.get(f"/api/v1/resources/{quote(ODD, safe='')}")
    raw = http.get(f"/api/v1/resources/{ODD}")
    actions = http.get(f"/api/v1/resources/{quote(ODD, safe='')}/actions")

    assert encoded.status_code == 200, encoded.text
    assert encoded.json() == raw.json()
    body = encoded.json()
    assert body["id"] == ODD and body["status"] == "deployed"
    assert body["attributes"]["content"] == "hi" and body["attributes"]["path"] == "/etc/lsm,a=b:c/motd"
    assert actions.status_code == 200
    assert [a["action"] for a in actions.json()] == ["none", "create"]  # newest first
    assert [
        a["action"] for a in http.get(f"/api/v1/resources/{ODD}/actions", params={"offset": 1}).json()
    ] == ["create"]


def test_an_unknown_resource_is_a_404_naming_it(http: httpx.Client) -> None:
    missing = rid("net::Host", "a1", "ghost")
    for path in (f"/api/v1/resources/{quote(missing, safe='')}", f"/api/v1/resources/{missing}/actions"):
        response = http.get(path)
        assert response.status_code == 404
        body = response.json()
        assert body["error"] == "not_found" and body["resource_id"] == missing and missing in body["message"]


# -- deploy -----------------------------------------------------------------------------------------------
def test_deploy_schedules_failed_and_skipped_again_and_repair_everything(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    seed_fleet(engine)

    first = http.post("/api/v1/deploy", json={})
    again = http.post("/api/v1/deploy", json={})
    only_a1 = http.post("/api/v1/deploy", json={"repair": True, "agents": ["a1"]})
    status = http.get("/api/v1/deploy").json()

    assert first.status_code == 200, first.text
    assert (first.json()["scheduled"], again.json()["scheduled"], only_a1.json()["scheduled"]) == (2, 0, 2)
    assert first.json()["dry_run"] is False and first.json()["version"] is None  # no desired state exported
    assert status["counts"] == {"pending": 4, "deployed": 1} and status["total"] == 5
    host = http.get(f"/api/v1/resources/{rid('net::Host', 'a1', 'h2')}").json()
    assert (host["status"], host["attempts"]) == ("pending", 0)
    assert http.get("/api/v1/deploy", params={"agent": "a2"}).json()["counts"] == {"pending": 2}


def test_deploy_refuses_unknown_fields_and_empty_agent_names(http: httpx.Client) -> None:
    unknown = http.post("/api/v1/deploy", json={"dryrun": True})
    empty = http.post("/api/v1/deploy", json={"agents": [""]})
    assert unknown.status_code == 422 and unknown.json()["errors"][0]["path"] == "dryrun"
    assert empty.status_code == 422 and empty.json()["field"] == "agents"


def test_deploy_wakes_the_agents_of_this_process(engine: ApiRuntime) -> None:
    seed_fleet(engine)
    woken: list[str] = []
    facade = DeployFacade(engine.core, wake=woken.append)
    result = facade.deploy(RequestContext.local(), DeployRequest(agents=["a1"]))
    assert (result.scheduled, woken) == (1, [env_id(engine)])


# -- instances ----------------------------------------------------------------------------------------------
def test_an_instance_shows_its_deployment_progress_and_diagnose_names_what_failed(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    box = http.post("/lsm/v1/service_inventory/box", json={"attributes": {"name": "b1"}}).json()
    seed_fleet(engine)
    mine = [
        rid("net::Host", "a1", "h1"),
        rid("net::Host", "a1", "h2"),
        rid("net::Port", "a2", "p1"),
        rid("net::Port", "a2", "p2"),
        rid("net::Port", "a2", "p9"),  # no state row yet
    ]
    seed_instance(engine.db, env_id(engine), box["id"], mine)
    base = f"/lsm/v1/service_inventory/box/{box['id']}"

    shown = http.get(base).json()
    listed = http.get("/lsm/v1/service_inventory/box").json()
    resources = {r["id"]: r for r in http.get(f"{base}/resources").json()}
    diagnosis = http.get(f"{base}/diagnose").json()

    progress = {"total": 5, "deployed": 1, "failed": 1, "skipped": 1, "waiting": 2}
    assert shown["deployment_progress"] == progress
    assert listed[0]["deployment_progress"] is None  # the list route stays one query
    assert {k: r["status"] for k, r in resources.items()} == {
        mine[0]: "deployed",
        mine[1]: "failed",
        mine[2]: "skipped",
        mine[3]: "pending",
        mine[4]: "pending",
    }
    assert diagnosis["deployment_progress"] == progress
    problems = {r["id"]: r for r in diagnosis["resources"]}
    assert set(problems) == {mine[1], mine[2]}
    assert problems[mine[1]]["last_error"] == "unreachable" and problems[mine[1]]["attempts"] == 3
    assert problems[mine[2]]["blocked_by"] == [mine[1]]


# -- dry run -------------------------------------------------------------------------------------------------
def export_files(engine: ApiRuntime, tmp_path: Path) -> dict[str, Path]:
    """A version with: a missing file, a drifted one, one in its desired state, a broken and an
    orphan resource, and a file of another agent."""
    paths = {name: tmp_path / f"{name}.txt" for name in ("new", "drifted", "same", "theirs")}
    paths["drifted"].write_text("old")
    paths["same"].write_text("same")
    resources = [
        filemodel.TFile(agent="local", path=str(paths["new"]), content="fresh"),
        filemodel.TFile(agent="local", path=str(paths["drifted"]), content="new"),
        filemodel.TFile(agent="local", path=str(paths["same"]), content="same"),
        filemodel.TFile(agent="remote", path=str(paths["theirs"]), content="x"),
        filemodel.Broken(agent="local", name="b"),
        filemodel.Orphan(agent="local", name="o"),
    ]
    records = [ResourceRecord(*r.to_data()) for r in resources]
    engine.store.export(env_id(engine), ExportRequest(kind="full", shared=records))
    return paths


def test_dry_run_reports_the_changes_writes_nothing_and_logs_each_resource(
    engine: ApiRuntime, http: httpx.Client, tmp_path: Path
) -> None:
    paths = export_files(engine, tmp_path)
    filemodel.CALLS.clear()

    response = http.post("/api/v1/deploy", json={"dry_run": True, "agents": ["local"]})

    assert response.status_code == 200, response.text
    result = response.json()
    assert result["dry_run"] is True and result["version"] == 1 and result["scheduled"] == 0
    items = {item["id"]: item for item in result["resources"]}
    new, drifted, same = (
        rid("test::File", "local", str(paths[n]), key="path") for n in ("new", "drifted", "same")
    )
    broken, orphan = rid("test::Broken", "local", "b"), rid("test::Orphan", "local", "o")
    assert set(items) == {new, drifted, same, broken, orphan}  # not the other agent's file
    assert items[new]["action"] == "create"
    assert items[new]["changes"]["content"] == {"current": None, "desired": "fresh"}
    assert items[drifted]["action"] == "update"
    assert items[drifted]["changes"] == {"content": {"current": "old", "desired": "new"}}
    assert (items[same]["action"], items[same]["changes"], items[same]["error"]) == ("none", {}, None)
    assert items[broken]["action"] == "error" and "can not be reached" in items[broken]["error"]
    assert items[orphan]["action"] == "error" and "test::Orphan" in items[orphan]["error"]
    # nothing was written: only pre, read and post ran
    assert not paths["new"].exists() and paths["drifted"].read_text() == "old"
    assert set(filemodel.CALLS) == {"pre", "read", "post"}
    # each item is a dry-run line of its resource's action log
    log = http.get(f"/api/v1/resources/{quote(drifted, safe='')}/actions").json()
    assert [(a["action"], a["dry_run"], a["status"]) for a in log] == [("update", True, "pending")]
    assert log[0]["changes"]["content"]["current"] == "old"
    assert any(m["message"] == "read the file" for m in log[0]["messages"])
    broken_log = http.get(f"/api/v1/resources/{broken}/actions").json()
    assert [(a["action"], a["status"]) for a in broken_log] == [("error", "failed")]


def test_dry_run_without_a_desired_state_reports_nothing(http: httpx.Client) -> None:
    result = http.post("/api/v1/deploy", json={"dry_run": True}).json()
    assert result == {"version": None, "dry_run": True, "scheduled": 0, "resources": []}


# -- sets named by their root ---------------------------------------------------------------------------
def test_every_answer_with_a_set_id_names_the_set_by_its_roots_entity_and_identity(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    box = http.post("/lsm/v1/service_inventory/box", json={"attributes": {"name": "b1"}}).json()
    mine, shared = rid("net::Host", "a1", "h1"), rid("net::Host", "a1", "h0")
    seed_states(engine.db, env_id(engine), [state(mine, set_name=box["id"]), state(shared)])
    seed_instance(engine.db, env_id(engine), box["id"], [mine])
    record = ResourceRecord(mine, {"agent": "a1"})
    engine.store.export(env_id(engine), ExportRequest(kind="full", sets={box["id"]: [record]}))

    listed = {r["id"]: r for r in http.get("/api/v1/resources").json()}
    one = http.get(f"/api/v1/resources/{quote(mine, safe='')}").json()
    of_instance = http.get(f"/lsm/v1/service_inventory/box/{box['id']}/resources").json()
    versions = http.get("/api/v1/desired_state").json()
    version = http.get(f"/api/v1/desired_state/{versions[0]['version']}").json()

    assert (listed[mine]["set"], listed[mine]["set_name"]) == (box["id"], "box b1")
    assert (listed[shared]["set"], listed[shared]["set_name"]) == (None, None)
    assert one["set_name"] == "box b1"
    assert [(r["set"], r["set_name"]) for r in of_instance] == [(box["id"], "box b1")]
    assert versions[0]["sets_replaced"] == [box["id"]] and versions[0]["set_names"] == {box["id"]: "box b1"}
    assert version["set_names"] == {box["id"]: "box b1"}
