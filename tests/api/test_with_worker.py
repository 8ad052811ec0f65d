"""The API with the embedded compile worker running, on the ``examples/router_port`` model:
instances walk their lifecycle by themselves and every step shows in the event log; compiles
can be awaited; desired-state versions are served."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.testing import running_engine, served_url

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "router_port"
INVENTORY = "/lsm/v1/service_inventory"


@pytest.fixture
def http(tmp_path: Path) -> Iterator[httpx.Client]:
    with (
        running_engine(EXAMPLE, f"sqlite:///{tmp_path / 'lsm.db'}") as engine,
        served_url(engine) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        yield client


def eventually(http: httpx.Client, path: str, done: Callable[[Any], bool], timeout: float = 30.0) -> Any:
    """GET ``path`` until ``done(body)``; the last body, or a failure after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        body = http.get(path).json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"{path} did not get there in {timeout} s: {body}"
        time.sleep(0.05)


def order(http: httpx.Client, entity: str, attributes: dict[str, Any]) -> dict[str, Any]:
    response = http.post(f"{INVENTORY}/{entity}", json={"attributes": attributes})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert (body["version"], body["state"]) == (1, "start")
    return body


def test_every_step_of_an_order_is_in_the_event_log(http: httpx.Client) -> None:
    router = order(http, "router", {"mgmt_ip": "10.0.0.1", "name": "edge"})
    port = order(http, "port", {"name": "eth0", "router": router["id"]})

    for item in (router, port):
        path = f"{INVENTORY}/{item['service_entity']}/{item['id']}"
        done = eventually(http, path, lambda i: i["state"] == "creating")
        log = http.get(f"{path}/log").json()

        assert [(e["source"], e["target"], e["version"]) for e in log] == [
            (None, "start", 1),
            ("start", "acknowledged", 2),
            ("acknowledged", "creating", 3),
        ]
        assert log[1]["compile_id"] is not None  # the validation compile that decided it
        assert done["version"] == 3 and done["desired_state_version"] >= 1
        assert done["active_attributes"] == item["candidate_attributes"]
        assert done["candidate_attributes"] is None


def test_a_candidate_the_model_rejects_ends_rejected_with_the_reason(http: httpx.Client) -> None:
    router = order(http, "router", {"mgmt_ip": "10.0.0.2", "name": "edge"})
    port = order(http, "port", {"name": "eth0", "router": router["id"], "mtu": 10})
    path = f"{INVENTORY}/port/{port['id']}"

    eventually(http, path, lambda i: i["state"] == "rejected")
    log = http.get(f"{path}/log").json()
    diagnosis = http.get(f"{path}/diagnose").json()

    assert (log[-1]["source"], log[-1]["target"], log[-1]["is_error"]) == ("start", "rejected", True)
    assert diagnosis["state"] == "rejected"
    assert diagnosis["validation_compile"]["status"] == "failed"
    assert "mtu 10" in str(diagnosis["validation_compile"]["report"])


def test_a_compile_can_be_awaited_and_its_desired_state_read(http: httpx.Client) -> None:
    router = order(http, "router", {"mgmt_ip": "10.0.0.3", "name": "edge"})
    eventually(http, f"{INVENTORY}/router/{router['id']}", lambda i: i["state"] == "creating")

    report = http.post("/api/v1/compiles", json={"kind": "full", "wait": True}).json()
    versions = http.get("/api/v1/desired_state").json()
    latest = http.get(f"/api/v1/desired_state/{report['desired_state_version']}").json()
    resources = http.get(f"/api/v1/desired_state/{report['desired_state_version']}/resources").json()

    assert report["status"] == "success"
    assert versions[0]["version"] == report["desired_state_version"]
    assert [v["version"] for v in versions] == sorted((v["version"] for v in versions), reverse=True)
    assert latest["kind"] == "full"
    assert router["id"] in latest["sets"]
    assert {r["set"] for r in resources if r["id"].startswith("net::Router[")} == {router["id"]}
    unknown = http.get("/api/v1/desired_state/999")
    assert (unknown.status_code, unknown.json()["error"]) == (404, "not_found")
