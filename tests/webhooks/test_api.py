"""``/api/v1/webhooks`` and ``lsm webhook`` through the real app, served on 127.0.0.1.

The engine here runs no service loop (``embedded_worker=False``): these tests look at what
the API answers and stores, not at sending (``test_deliveries.py``). Every configured backend.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from lsm.cli import app
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.webhooks.conftest import FILE_MODEL, fast_config

UNKNOWN = "00000000-0000-0000-0000-000000000000"


@pytest.fixture
def http(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> Iterator[httpx.Client]:
    engine = engine_factory(FILE_MODEL, config=fast_config(tmp_path))
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def create(http: httpx.Client, **body: Any) -> dict[str, Any]:
    response = http.post("/api/v1/webhooks", json={"url": "http://127.0.0.1:9/hook", **body})
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


def test_the_secret_is_answered_once_and_never_listed(http: httpx.Client) -> None:
    created = create(http)
    chosen = create(http, secret="my-own-secret-0123456789", events=["deploy_outcome"])

    assert len(created["secret"]) >= 32 and chosen["secret"] == "my-own-secret-0123456789"
    assert created["events"] == ["instance_state", "compile_finished", "deploy_failed"]
    listed = http.get("/api/v1/webhooks")
    one = http.get(f"/api/v1/webhooks/{created['id']}")
    for response in (listed, one):
        assert response.status_code == 200
        assert created["secret"] not in response.text and chosen["secret"] not in response.text
    assert [h["id"] for h in listed.json()] == [created["id"], chosen["id"]]
    assert "secret" not in one.json() and one.json()["url"] == "http://127.0.0.1:9/hook"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "ftp://127.0.0.1/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "http://"}, "url"),
        ({"url": "javascript:alert(1)"}, "url"),
        ({"url": "http://h/" + "x" * 2100}, "url"),
        ({"url": "http://h/", "events": ["everything"]}, "events.0"),
        ({"url": "http://h/", "events": []}, "events"),
        ({"url": "http://h/", "secret": "short"}, "secret"),
        ({"url": "http://h/", "colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(http: httpx.Client, body: dict[str, Any], field: str) -> None:
    response = http.post("/api/v1/webhooks", json=body)
    assert response.status_code == 422, response.text
    assert field in [e["path"] for e in response.json()["errors"]]
    assert http.get("/api/v1/webhooks").json() == []  # nothing half-written


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/webhooks/{id}"),
        ("DELETE", "/api/v1/webhooks/{id}"),
        ("POST", "/api/v1/webhooks/{id}/test"),
        ("GET", "/api/v1/webhooks/{id}/deliveries"),
    ],
)
def test_an_unknown_webhook_is_a_404_naming_it(http: httpx.Client, method: str, path: str) -> None:
    response = http.request(method, path.format(id=UNKNOWN))
    assert response.status_code == 404
    assert response.json()["webhook"] == UNKNOWN
    assert http.request(method, path.format(id="not/an/id")).status_code == 404
    assert http.request(method, path.format(id="zz")).status_code == 422


def test_deliveries_are_paged_newest_first(http: httpx.Client) -> None:
    hook = create(http)["id"]
    pings = [http.post(f"/api/v1/webhooks/{hook}/test").json() for _ in range(3)]

    first = http.get(f"/api/v1/webhooks/{hook}/deliveries", params={"limit": 2}).json()
    rest = http.get(f"/api/v1/webhooks/{hook}/deliveries", params={"limit": 2, "offset": 2}).json()

    assert [d["id"] for d in first + rest] == [p["id"] for p in reversed(pings)]
    assert {(d["event"], d["status"], d["attempts"]) for d in first + rest} == {("ping", "pending", 0)}
    assert all(d["payload"]["delivery"] == d["id"] for d in first + rest)
    assert http.get(f"/api/v1/webhooks/{hook}/deliveries", params={"limit": 0}).status_code == 422


def test_a_removed_webhook_is_gone_but_its_log_stays(http: httpx.Client) -> None:
    hook = create(http)["id"]
    ping = http.post(f"/api/v1/webhooks/{hook}/test").json()

    removed = http.delete(f"/api/v1/webhooks/{hook}")

    assert removed.status_code == 200 and removed.json()["active"] is False
    assert http.get(f"/api/v1/webhooks/{hook}").status_code == 404
    assert http.delete(f"/api/v1/webhooks/{hook}").status_code == 404
    assert http.get("/api/v1/webhooks").json() == []
    log = http.get(f"/api/v1/webhooks/{hook}/deliveries").json()
    assert [(d["id"], d["status"]) for d in log] == [(ping["id"], "cancelled")]
    actions = [line["action"] for line in http.get("/api/v1/audit").json()]
    assert {"webhook.create", "webhook.delete"} <= set(actions)


def test_the_cli_adds_lists_shows_and_removes_webhooks(http: httpx.Client) -> None:
    runner = CliRunner()

    def lsm(*args: str) -> Any:
        result = runner.invoke(app, [*args, "--url", str(http.base_url), "--json"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    added = lsm("webhook", "add", "https://example.invalid/in", "--event", "deploy_failed")
    hook = added["id"]
    assert added["events"] == ["deploy_failed"] and added["secret"]
    assert [h["id"] for h in lsm("webhook", "list")] == [hook]
    assert lsm("webhook", "show", hook)["url"] == "https://example.invalid/in"
    ping = lsm("webhook", "ping", hook)
    assert [d["id"] for d in lsm("webhook", "deliveries", hook)] == [ping["id"]]
    assert lsm("webhook", "rm", hook)["active"] is False
    url = str(http.base_url)
    table = runner.invoke(app, ["webhook", "deliveries", hook, "--url", url], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and ping["id"] in table.stdout and "cancelled" in table.stdout
    bad = runner.invoke(app, ["webhook", "add", "ftp://x", "--url", url])
    assert bad.exit_code == 1 and "url" in bad.output
