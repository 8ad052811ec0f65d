"""The brake over HTTP: halt, resume, pause and unpause through the real app (uvicorn on
127.0.0.1), on both backends; what the environment, the audit trail, ``/metrics``, the console
pages, the client and the CLI show of it; and the bad input it refuses."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from lsm.api.console.session import ENVIRONMENT_COOKIE
from lsm.cli import app
from lsm.client import NO_RETRY, Client
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.api.test_metrics import scrape, value

ENV = "/api/v1/environments/default"
#: every console page of the environment (the instance page is added by the test)
PAGES = ("/", "/catalog", "/inventory", "/inventory/router", "/compiles", "/desired-state", "/resources")
BANNER = "Environment default is halted"


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> ApiRuntime:
    return engine_factory(
        "tests.deploy.file_model", embedded_agent=True, config={"state_dir": str(tmp_path / "state")}
    )


@pytest.fixture
def url(engine: ApiRuntime) -> Iterator[str]:
    with served_url(engine) as served:
        yield served


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client


def post(http: httpx.Client, path: str, body: Any = None) -> dict[str, Any]:
    answer = http.post(path, json=body)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_halt_resume_pause_and_unpause_answer_the_environment_and_repeat_as_no_ops(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    assert http.get(ENV).json()["halted"] is False
    first = post(http, f"{ENV}/halt")
    assert first["halted"] is True and first["halted_by"] == "local"
    again = post(http, f"{ENV}/halt")
    assert again == first == http.get(ENV).json()  # a second halt changes nothing, not even the time

    paused = post(http, f"{ENV}/agents/ports/pause", {"stay_paused": True})["paused_agents"]
    assert [(p["agent"], p["stay_paused"]) for p in paused] == [("ports", True)]
    assert post(http, f"{ENV}/agents/routers/pause")["paused_agents"][1]["stay_paused"] is False
    routers = post(http, f"{ENV}/agents/routers/pause")["paused_agents"][1]
    assert post(http, f"{ENV}/agents/ports/pause")["paused_agents"] == [*paused, routers]
    listed = {e["name"]: e for e in http.get("/api/v1/environments").json()}
    assert listed["default"]["halted"] is True and len(listed["default"]["paused_agents"]) == 2

    resumed = post(http, f"{ENV}/resume")
    assert resumed["halted"] is False and resumed["halted_at"] is None
    assert [p["agent"] for p in resumed["paused_agents"]] == ["ports"]  # routers went with the halt
    assert post(http, f"{ENV}/resume") == resumed
    assert post(http, f"{ENV}/agents/ports/unpause")["paused_agents"] == []
    assert post(http, f"{ENV}/agents/ports/unpause")["paused_agents"] == []

    audit = engine.facades.audit.list_audit(RequestContext.local(), limit=50)
    actions = [(a.action, a.target) for a in audit if a.action.startswith(("environment.", "agent."))]
    assert actions == [  # only what changed something, newest first
        ("agent.unpause", "ports"),
        ("environment.resume", "default"),
        ("agent.pause", "routers"),
        ("agent.pause", "ports"),
        ("environment.halt", "default"),
    ]


@pytest.mark.parametrize(
    ("path", "body", "status", "field"),
    [
        (f"{ENV}/agents/a/pause", {"stay_paused": "yes"}, 422, "stay_paused"),
        (f"{ENV}/agents/a/pause", {"stay": True}, 422, "stay"),
        (f"{ENV}/agents/{'a' * 201}/pause", None, 422, "name"),
        ("/api/v1/environments/nowhere/halt", None, 404, None),
        ("/api/v1/environments/nowhere/agents/a/unpause", None, 404, None),
    ],
)
def test_bad_input_is_refused_with_the_field_named_and_nothing_written(
    engine: ApiRuntime, http: httpx.Client, path: str, body: Any, status: int, field: str | None
) -> None:
    answer = http.post(path, json=body)
    assert answer.status_code == status, answer.text
    if field is not None:
        assert field in answer.text
    assert http.get(ENV).json()["paused_agents"] == []
    assert not http.get(ENV).json()["halted"]


def test_metrics_show_a_gauge_per_environment_and_per_paused_agent(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    samples, types = scrape(http)
    assert value(samples, "lsm_environment_halted") == 0
    assert types["lsm_environment_halted"] == types["lsm_agent_paused"] == "gauge"
    post(http, f"{ENV}/halt")
    post(http, f"{ENV}/agents/ports/pause")
    samples, _ = scrape(http)
    assert value(samples, "lsm_environment_halted") == 1
    assert value(samples, "lsm_agent_paused", agent="ports") == 1
    post(http, f"{ENV}/resume")  # the pause made during the halt goes with it
    samples, _ = scrape(http)
    assert value(samples, "lsm_environment_halted") == 0
    assert value(samples, "lsm_agent_paused", agent="ports") is None


def test_every_console_page_of_a_halted_environment_shows_the_banner(
    engine: ApiRuntime, http: httpx.Client, url: str
) -> None:
    router = engine.facades.inventory.create_instance(RequestContext.local(), "router", {"name": "r1"})
    pages = (*PAGES, f"/inventory/router/{router.id}")
    assert not any(BANNER in http.get(p).text for p in pages)
    post(http, f"{ENV}/halt")
    post(http, f"{ENV}/agents/ports/pause", {"stay_paused": True})
    for page in pages:
        text = http.get(page).text
        assert BANNER in text and "lsm environment resume" in text, page
        assert "Paused agents: <code>ports</code>" in text, page
    engine.facades.environments.create_environment(RequestContext.local(), "other", "tests.deploy.file_model")
    other = httpx.get(f"{url}/", cookies={ENVIRONMENT_COOKIE: "other"}, timeout=30).text
    assert '<option value="other" selected>' in other
    assert "is halted" not in other and "Paused agents" not in other  # only that environment's pages
    post(http, f"{ENV}/resume")
    assert BANNER not in http.get("/").text


def test_the_client_and_the_cli_halt_resume_pause_and_unpause(engine: ApiRuntime, url: str) -> None:
    with Client(url, retry=NO_RETRY) as client:
        assert client.halt()["halted"] is True
        assert client.pause_agent("a/b", stay_paused=True)["paused_agents"][0]["agent"] == "a/b"
        assert client.unpause_agent("a/b")["paused_agents"] == []
        assert client.resume()["halted"] is False

    def lsm(*args: str) -> Any:
        result = CliRunner().invoke(app, [*args, "--url", url], env={"COLUMNS": "250"})
        assert result.exit_code == 0, result.output
        return result

    assert "is halted since" in lsm("environment", "halt").stdout
    assert json.loads(lsm("environment", "show", "--json").stdout)["halted"] is True
    paused = lsm("agent", "pause", "ports", "--stay-paused")
    assert "paused agents" in paused.stdout and "stays paused" in paused.stdout
    assert "unpaused" in lsm("agent", "pause", "routers").stdout  # lifted by the resume
    resumed = lsm("environment", "resume")
    assert "environment default runs" in resumed.stdout and "routers" not in resumed.stdout
    assert json.loads(lsm("agent", "unpause", "ports", "--json").stdout)["paused_agents"] == []
