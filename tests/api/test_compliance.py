"""``/api/v1/compliance`` and the scoped ``/api/v1/deploy`` through the real app (uvicorn on
127.0.0.1), on both backends, with the engine's own loop running a deploy agent over real files
(``tests.deploy.file_model``): the report is run by the agent, never by the API request."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.deploy.agents import export, file
from tests.waiting import wait_until

MODEL = "tests.deploy.file_model"


def rid(path: str, agent: str = "a") -> str:
    return f"test::File[{agent},path={path}]"


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime], state_dir: Path) -> ApiRuntime:
    engine = engine_factory(
        MODEL, embedded_worker=True, embedded_agent=True, config={"state_dir": str(state_dir)}
    )
    export(
        engine,
        {
            "s1": [file("s1/a.conf", "one"), file("s1/b.conf", "two", agent="b")],
            "s2": [file("s2/a.conf", "three"), file("s2/b.conf", "four", agent="b")],
        },
    )
    engine.processing.wake()
    wait_until(lambda: _all_deployed(engine), "the four files deployed")
    return engine


def _all_deployed(engine: ApiRuntime) -> bool:
    status = engine.facades.deploy.status(_local())
    return status.total == 4 and status.counts.get("deployed") == 4  # type: ignore[call-overload]  # counts is keyed by ResourceStatus, a str enum


def _local() -> Any:
    from lsm.facade import RequestContext

    return RequestContext.local()


@pytest.fixture
def http(engine: ApiRuntime) -> Iterator[httpx.Client]:
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def finished(http: httpx.Client, report_id: str, **params: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def done() -> bool:
        found.update(http.get(f"/api/v1/compliance/{report_id}", params=params).json())
        return found["status"] in ("done", "failed")

    wait_until(done, f"compliance report {report_id} finished")
    return found


def test_a_report_is_asked_for_run_by_the_agent_and_paged(
    engine: ApiRuntime, http: httpx.Client, state_dir: Path
) -> None:
    (state_dir / "s1/a.conf").write_text("edited")
    (state_dir / "s2/b.conf").unlink()
    os.utime(state_dir / "s1/a.conf", (1_000_000, 1_000_000))

    asked = http.post("/api/v1/compliance", json={})

    assert asked.status_code == 202, asked.text
    assert asked.json()["status"] in ("queued", "running", "done") and asked.json()["total"] == 4
    report = finished(http, asked.json()["id"], limit=2)
    assert report["status"] == "done" and report["checked"] == 4
    assert report["counts"] == {"drifted": 1, "in_sync": 2, "missing": 1}
    assert [r["id"] for r in report["resources"]] == [rid("s1/a.conf"), rid("s2/a.conf")]  # id order
    second = http.get(f"/api/v1/compliance/{report['id']}", params={"limit": 2, "offset": 2}).json()
    assert [r["id"] for r in second["resources"]] == [rid("s1/b.conf", "b"), rid("s2/b.conf", "b")]
    drifted = http.get(f"/api/v1/compliance/{report['id']}", params={"outcome": "drifted"}).json()
    assert drifted["resources"] == [
        {
            "id": rid("s1/a.conf"),
            "type": "test::File",
            "agent": "a",
            "set": "s1",
            "outcome": "drifted",
            "changes": {"content": {"current": "edited", "desired": "one"}},
            "error": None,
        }
    ]
    # the report changed nothing on the target
    assert (state_dir / "s1/a.conf").read_text() == "edited"
    assert (state_dir / "s1/a.conf").stat().st_mtime == 1_000_000
    assert not (state_dir / "s2/b.conf").exists()
    listed = http.get("/api/v1/compliance").json()
    assert [r["id"] for r in listed] == [report["id"]] and listed[0]["resources"] == []
    metrics = http.get("/metrics").text
    for agent, outcome in (("a", "drifted"), ("b", "missing"), ("a", "in_sync")):
        labels = f'agent="{agent}",environment="default",outcome="{outcome}",resource_type="test::File"'
        assert f"lsm_compliance_checks_total{{{labels}}} 1.0" in metrics, labels
    assert "lsm_compliance_parts" in metrics


def test_a_report_over_a_selection_covers_only_it(http: httpx.Client) -> None:
    asked = http.post("/api/v1/compliance", json={"agents": ["b"], "sets": ["s2"]}).json()
    report = finished(http, asked["id"])
    assert report["selection"] == {"agents": ["b"], "types": None, "sets": ["s2"], "instances": None}
    assert [r["id"] for r in report["resources"]] == [rid("s2/b.conf", "b")]
    nothing = http.post("/api/v1/compliance", json={"types": ["test::None"]}).json()
    assert (nothing["status"], nothing["total"]) == ("done", 0)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"agents": []}, "agents"),
        ({"types": [""]}, "types"),
        ({"sets": ["x" * 300]}, "sets"),
        ({"instances": ["not-an-id"]}, "instances"),
    ],
)
def test_a_bad_selection_is_a_422_naming_the_field(
    http: httpx.Client, body: dict[str, Any], field: str
) -> None:
    for path in ("/api/v1/compliance", "/api/v1/deploy"):
        answer = http.post(path, json=body)
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == field


def test_unknown_fields_instances_and_reports_are_refused(http: httpx.Client) -> None:
    typo = http.post("/api/v1/compliance", json={"agent": ["a"]})
    assert typo.status_code == 422 and typo.json()["errors"][0]["path"] == "agent"
    ghost = str(uuid.uuid4())
    unknown = http.post("/api/v1/compliance", json={"instances": [ghost]})
    assert unknown.status_code == 404 and unknown.json()["ids"] == [ghost]
    assert http.post("/api/v1/deploy", json={"instances": [ghost], "dry_run": True}).status_code == 404
    missing = http.get(f"/api/v1/compliance/{ghost}")
    assert missing.status_code == 404 and missing.json()["report"] == ghost
    assert http.get(f"/api/v1/compliance/{ghost}", params={"limit": 5000}).status_code == 422


def test_a_scoped_repair_touches_only_its_selection(
    engine: ApiRuntime, http: httpx.Client, state_dir: Path
) -> None:
    for path in ("s1/a.conf", "s2/a.conf", "s1/b.conf"):
        (state_dir / path).write_text("edited")

    answer = http.post("/api/v1/deploy", json={"repair": True, "sets": ["s1"], "agents": ["a"]})

    assert answer.status_code == 200, answer.text
    assert answer.json()["scheduled"] == 1
    wait_until(lambda: (state_dir / "s1/a.conf").read_text() == "one", "s1/a.conf repaired")
    wait_until(lambda: _all_deployed(engine), "the repair finished")
    assert (state_dir / "s2/a.conf").read_text() == "edited"  # another set
    assert (state_dir / "s1/b.conf").read_text() == "edited"  # another agent
    dry = http.post("/api/v1/deploy", json={"dry_run": True, "types": ["test::File"], "sets": ["s2"]}).json()
    assert {(i["id"], i["action"]) for i in dry["resources"]} == {
        (rid("s2/a.conf"), "update"),
        (rid("s2/b.conf", "b"), "none"),
    }
