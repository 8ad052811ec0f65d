"""The operations pages (compiles, desired state, resources, discovered) through the real app.

No browser here (see test_operations_browser.py): each page is fetched through
``httpx.ASGITransport`` on each backend, its key content checked, bad input answered with a
typed error page naming the parameter (never a 500), and the adopt form checked for its role,
its CSRF token and its 409.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import tests.models.fragile as fragile
from lsm.api.console.compiles_pages import error_location, stage_timings, traceback_lines
from lsm.api.console.render import templates
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.auth import AuthConfig
from tests.console.ops_fixtures import ROUTERS, Pages, deployed_engine, discovery_engine, wait_for

__all__ = ["deployed_engine", "discovery_engine"]


def up_routers(pages: Pages, *names: str) -> list[dict[str, Any]]:
    for name in names:
        answer = pages.post(ROUTERS, json={"attributes": {"name": name}})
        assert answer.status_code == 200, answer.text

    def all_up() -> list[dict[str, Any]] | None:
        found: list[dict[str, Any]] = pages.get(ROUTERS).json()
        return found if len(found) == len(names) and all(r["state"] == "up" for r in found) else None

    return list(wait_for(all_up, f"routers {names} to be up"))


@pytest.fixture
def pages(deployed_engine: ApiRuntime) -> Pages:
    """Two routers up, then one updated; ``pages.before_update``: the newest version before it."""
    pages = Pages(deployed_engine)
    routers = up_routers(pages, "edge-1", "edge-2")
    first = routers[0]
    pages.before_update = pages.get("/api/v1/desired_state").json()[0]["version"]  # type: ignore[attr-defined]  # set on the fixture by the fixture
    answer = pages.request(
        "PATCH",
        f"{ROUTERS}/{first['id']}",
        json={"current_version": first["version"], "attributes": {"motd": "bye"}},
    )
    assert answer.status_code == 200, answer.text
    wait_for(
        lambda: (
            pages.get(f"{ROUTERS}/{first['id']}").json()["state"] == "up"
            and pages.get(f"{ROUTERS}/{first['id']}").json()["version"] > first["version"] + 1
        ),
        "the update to be deployed",
    )
    return pages


def assert_error_page(answer: Any, status: int, *words: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    for word in words:
        assert word in answer.text, (word, answer.text)


def test_the_compile_pages(pages: Pages) -> None:
    compiles = pages.get("/api/v1/compiles").json()
    listing = pages.get("/compiles")
    assert listing.status_code == 200
    for c in compiles:
        assert f'data-compile="{c["id"]}"' in listing.text
    assert '<div id="compiles-region" data-live>' in listing.text  # refreshed live by console.js
    assert '<meta name="page-url" content="/compiles">' in listing.text

    succeeded = pages.get("/compiles", params={"status": "success", "kind": "partial"})
    expected = [c["id"] for c in compiles if c["status"] == "success" and c["kind"] == "partial"]
    assert expected and re.findall(r'data-compile="([^"]+)"', succeeded.text) == expected

    ran = next(c for c in compiles if c["desired_state_version"] and not c["merged_into"])
    report = pages.get(f"/compiles/{ran['id']}")
    assert report.status_code == 200
    assert 'data-stage="total"' in report.text and "Stage timings" in report.text
    assert f'href="/desired-state/{ran["desired_state_version"]}"' in report.text
    for entity, ids in ran["report"].get("selected", {}).items():
        for instance_id in ids if isinstance(ids, list) else []:
            assert f'href="/inventory/{entity}/{instance_id}"' in report.text

    assert_error_page(pages.get("/compiles", params={"kind": "weekly"}), 422, "kind must be one of")
    assert_error_page(pages.get("/compiles", params={"offset": "-3"}), 422, "offset must be between")
    assert_error_page(pages.get("/compiles", params={"offset": "2" * 40}), 422, "offset")
    assert_error_page(pages.get("/compiles/nope"), 404, "nope")


def test_the_desired_state_pages(pages: Pages) -> None:
    versions = pages.get("/api/v1/desired_state").json()
    # the versions just before and after the update: one router's file changed its content
    newest, oldest = versions[0]["version"], pages.before_update  # type: ignore[attr-defined]  # set on the fixture by the fixture
    listing = pages.get("/desired-state")
    assert [int(v) for v in re.findall(r'data-version="(\d+)"', listing.text)] == [
        v["version"] for v in versions
    ]

    one = pages.get(f"/desired-state/{newest}")
    content = pages.get(f"/api/v1/desired_state/{newest}").json()
    for name in content["sets"]:
        assert f'data-set="{name}"' in one.text
    # each set is named after its root: the router's entity and identity, in the API and the page
    routers = {
        r["id"]: (r["active_attributes"] or r["candidate_attributes"]) for r in pages.get(ROUTERS).json()
    }
    assert content["set_names"] == {name: f"router {routers[name]['name']}" for name in content["sets"]}
    for label in content["set_names"].values():
        assert f">{label}</a>" in one.text
    resources = pages.get(f"/api/v1/desired_state/{newest}/resources").json()
    assert {r["set_name"] for r in resources if r["set"]} <= set(content["set_names"].values())
    set_name = next(iter(content["sets"]))
    in_set = pages.get(f"/desired-state/{newest}", params={"set": set_name})
    for rid in content["sets"][set_name]:
        assert rid in in_set.text
    # the pictures are the API's graphs, drawn: one node per set and resource, per required resource
    as_json = {"version": newest, "format": "json"}
    sets_graph = pages.get("/api/v1/graph/sets", params=as_json)
    requires_graph = pages.get("/api/v1/graph/requires", params={**as_json, "set": set_name})
    for page, css, graph in ((one, "sets-drawing", sets_graph), (in_set, "requires-drawing", requires_graph)):
        drawing = page.text.split(f'class="drawing {css}"', 1)[1].split("</svg>", 1)[0]
        drawn = set(re.findall(r'data-id="([^"]*)"', drawing))
        assert drawn == {html.escape(node["id"]) for node in graph.json()["nodes"]} and drawn, css
    # the sets picture names each set as the table does: its root's entity and identity
    set_labels = {n["label"].split("\n")[0] for n in sets_graph.json()["nodes"] if n["id"].startswith("set:")}
    assert set(content["set_names"].values()) <= set_labels

    picked = pages.get("/desired-state/diff", params={"a": oldest, "b": newest})
    assert (
        picked.status_code == 303 and picked.headers["location"] == f"/desired-state/{oldest}/diff/{newest}"
    )
    diff = pages.get(f"/desired-state/{oldest}/diff/{newest}")
    api = pages.get(f"/api/v1/desired_state/{oldest}/diff/{newest}").json()
    assert diff.status_code == 200
    for s in api["sets"]:
        assert f'data-set="{s["name"]}"' in diff.text
        assert s["set_name"] == content["set_names"].get(s["name"], s["set_name"])
    assert re.findall(r'data-resource="([^"]+)" data-change', diff.text) == [
        r["id"] for r in api["resources"]
    ]
    changed = [r for r in api["resources"] if r["change"] == "changed"]
    assert changed and "content" in changed[0]["fields"]
    assert 'class="changed"' in diff.text and 'data-attribute="content" class="changed"' in diff.text
    assert "No difference" in pages.get(f"/desired-state/{newest}/diff/{newest}").text

    assert_error_page(pages.get("/desired-state/abc"), 422, "version must be a desired-state version")
    assert_error_page(pages.get(f"/desired-state/{newest}/diff/-1"), 422, "other")
    assert_error_page(pages.get(f"/desired-state/{newest}/diff/999"), 404, "version 999")
    assert_error_page(pages.get("/desired-state/diff", params={"a": "x", "b": "1"}), 422, "a must be")
    assert_error_page(pages.get(f"/desired-state/{newest}", params={"set": "nosuch"}), 422, "no set")


def test_the_resource_pages(pages: Pages) -> None:
    resources = pages.get("/api/v1/resources").json()
    listing = pages.get("/resources")
    assert re.findall(r'data-resource="([^"]+)"', listing.text) == [r["id"] for r in resources]
    assert "deployed" in listing.text
    none_failed = pages.get("/resources", params={"status": "failed"})
    assert "No resources matching the filter" in none_failed.text
    by_agent = pages.get("/resources", params={"agent": "routers"})
    assert re.findall(r'data-resource="([^"]+)"', by_agent.text) == [
        r["id"] for r in resources if r["agent"] == "routers"
    ]

    rid = resources[0]["id"]
    one = pages.get(f"/resources/{quote(rid, safe='/')}")
    assert one.status_code == 200 and "Action log" in one.text
    actions = pages.get(f"/api/v1/resources/{quote(rid, safe='')}/actions").json()
    assert actions and len(re.findall(r"data-action=", one.text)) == len(actions)

    assert_error_page(pages.get("/resources", params={"status": "sleeping"}), 422, "status must be one of")
    assert_error_page(pages.get("/resources/test::File[nowhere,path=x]"), 404, "nowhere")


@pytest.mark.parametrize("discovery_engine", [True], indirect=True, ids=["auth-on"])
def test_a_viewer_sees_the_discovered_page_without_adopt_buttons_and_may_not_adopt(
    discovery_engine: ApiRuntime,
) -> None:
    tokens = discovery_engine.tokens  # type: ignore[attr-defined]  # set on the engine by ops_fixtures
    viewer, operator = Pages(discovery_engine, tokens["viewer"]), Pages(discovery_engine, tokens["operator"])
    seen = viewer.get("/discovered")
    assert seen.status_code == 200 and len(re.findall("data-discovered=", seen.text)) == 2
    assert 'action="/discovered/adopt"' not in seen.text
    assert operator.get("/discovered").text.count('action="/discovered/adopt"') == 2
    rid = re.findall(r'data-discovered="([^"]+)"', seen.text)[0]
    form = {"resource_id": rid, "entity": "managed_file", "csrf_token": viewer.csrf(seen)}
    assert_error_page(viewer.post("/discovered/adopt", data=form), 403, "operator")
    assert viewer.api("/lsm/v1/service_inventory/managed_file") == []
    assert_error_page(Pages(discovery_engine).get("/discovered"), 401, "token")


def test_the_discovered_page_and_adopting_from_it(discovery_engine: ApiRuntime) -> None:
    tokens = discovery_engine.tokens  # type: ignore[attr-defined]  # set on the engine by ops_fixtures
    pages = Pages(discovery_engine, tokens.get("operator"))
    found = pages.api("/api/v1/discovered")
    listing = pages.get("/discovered")
    assert re.findall(r'data-discovered="([^"]+)"', listing.text) == [r["id"] for r in found]
    assert listing.text.count('action="/discovered/adopt"') == len(
        found
    )  # local or operator: the caller acts
    assert 'value="managed_file"' in listing.text
    assert "Nothing discovered matching" in pages.get("/discovered", params={"type": "std::Nope"}).text
    assert_error_page(
        pages.get("/discovered", params={"managed": "maybe"}), 422, "managed must be true or false"
    )

    rid = found[0]["id"]
    form = {"resource_id": rid, "entity": "managed_file"}
    refused = pages.post("/discovered/adopt", data=form)  # no CSRF token: refused, nothing adopted
    assert_error_page(refused, 403, "CSRF")
    assert pages.api("/lsm/v1/service_inventory/managed_file") == []

    token = pages.csrf(listing)
    adopted = pages.post("/discovered/adopt", data={**form, "csrf_token": token})
    assert adopted.status_code == 303, adopted.text
    instances = pages.api("/lsm/v1/service_inventory/managed_file")
    assert [i["id"] for i in instances] == [adopted.headers["location"].rsplit("/", 1)[1]]
    assert adopted.headers["location"] == f"/inventory/managed_file/{instances[0]['id']}"
    assert f'href="/inventory/managed_file/{instances[0]["id"]}"' in pages.get("/discovered").text

    again = pages.post("/discovered/adopt", data={**form, "csrf_token": token})
    assert_error_page(again, 409, "already adopted by managed_file", instances[0]["id"])
    wrong = pages.post(
        "/discovered/adopt",
        data={"resource_id": found[1]["id"], "entity": "file_discovery", "csrf_token": token},
    )
    assert_error_page(wrong, 422, "declares no adoption")
    missing = pages.post(
        "/discovered/adopt",
        data={"resource_id": "std::File[x,path=/nope]", "entity": "managed_file", "csrf_token": token},
    )
    assert_error_page(missing, 404, "no discovered resource")
    empty = pages.post("/discovered/adopt", data={"entity": "managed_file", "csrf_token": token})
    assert_error_page(empty, 422, "resource_id")
    assert len(pages.api("/lsm/v1/service_inventory/managed_file")) == 1


def test_a_failed_compile_shows_its_model_error_and_traceback(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """The traceback is a detail (``lsm.api.disclosure``): the page shows it only to an admin
    who asks (``?details=1``), as the API does; everyone sees the error and its model line."""
    engine = engine_factory("tests.models.fragile", config={"auth": AuthConfig(enabled=True)})
    tokens = {
        role: engine.facades.tokens.create(RequestContext.local(), role, {"default": role}).token
        for role in ("viewer", "admin")
    }
    pages = Pages(engine, tokens["admin"])
    bearer = {"Authorization": f"Bearer {tokens['admin']}"}
    answer = pages.post(
        "/lsm/v1/service_inventory/widget",
        json={"attributes": {"name": "w1", "explode": True}},
        headers=bearer,
    )
    assert answer.status_code == 200, answer.text
    engine.processing.drain()
    failed = [c for c in pages.api("/api/v1/compiles") if c["status"] == "failed"]
    assert failed, "the exploding widget's compile did not fail"
    report = pages.get(f"/compiles/{failed[0]['id']}", params={"details": "1"})
    assert report.status_code == 200
    assert "widget w1 exploded" in report.text and 'class="traceback"' in report.text
    # the report locates the error in the model: its source line is highlighted, and its frame
    location = failed[0]["report"]["error"]["location"]
    assert location["source"] == 'raise ValueError(f"widget {w.name} exploded")'
    assert f'<span class="hit" data-line="{location["line"]}">' in report.text
    assert "raise ValueError(f&#34;widget {w.name} exploded&#34;)</span>" in report.text
    # the traceback's frame of that line, where it has one, is marked too
    frame = f"fragile.py&#34;, line {location['line']},"
    for found in re.finditer(re.escape(frame), report.text):
        line_start = report.text.rfind("\n", 0, found.start())
        assert '<span class="hit">' in report.text[line_start : found.start()], "an unmarked model frame"
    listed = pages.get("/compiles", params={"status": "failed"})
    assert re.findall(r'data-compile="([^"]+)"', listed.text) == [c["id"] for c in failed]

    # an admin who did not ask gets the error, its model line and a link to the details
    plain = pages.get(f"/compiles/{failed[0]['id']}")
    assert "widget w1 exploded" in plain.text and f'data-line="{location["line"]}"' in plain.text
    assert 'class="traceback"' not in plain.text and "data-details" in plain.text
    # a viewer never sees the traceback, nor the model's absolute path, even asking
    viewer = Pages(engine, tokens["viewer"])
    for shown in (
        viewer.get(f"/compiles/{failed[0]['id']}", params={"details": "1"}),
        viewer.get("/compiles"),
    ):
        assert shown.status_code == 200
        assert "widget w1 exploded" in shown.text or "/compiles/" in shown.text
        assert "Traceback" not in shown.text and 'class="traceback"' not in shown.text
        assert "data-details" not in shown.text
        assert str(Path(fragile.__file__).parent) not in shown.text


def test_the_operations_templates_are_package_data() -> None:
    package = files("lsm.api.console").joinpath("templates")
    names = [item.name for item in package.iterdir() if item.name.startswith("ops_")]
    assert len(names) >= 9
    for name in names:
        assert templates().get_template(name) is not None


def test_a_model_error_shows_its_source_line_and_its_frame() -> None:
    """``report.error.location`` (added by the diagnosis) is highlighted in the source and the traceback."""
    error = {
        "error": "model_error",
        "message": "widget w1 exploded",
        "traceback": 'Traceback (most recent call last):\n  File "/m/model.py", line 7, in gadgets\n'
        "    raise ValueError('boom')\nValueError: boom\n",
        "location": {
            "file": "/m/model.py",
            "line": 7,
            "function": "gadgets",
            "source": "raise ValueError('boom')",
        },
    }
    lines = traceback_lines(error)
    assert [hit for _, hit in lines] == [False, True, False, False]
    assert error_location(error) == error["location"] and error_location({"error": "x"}) is None
    html = (
        templates()
        .get_template("ops_compile.html")
        .render(
            nav=(),
            path="/compiles/x",
            environments=[],
            environment="",
            actor=None,
            auth=False,
            csrf="t",
            csrf_field="csrf_token",
            may_act=False,
            compile=_compile(error),
            report={"error": error},
            timings=[],
            selected=[],
            requested=[],
            error=error,
            location=error_location(error),
            traceback_lines=lines,
            other={},
        )
    )
    assert '<span class="hit" data-line="7">' in html and "raise ValueError(&#39;boom&#39;)" in html
    assert '<span class="hit">  File &#34;/m/model.py&#34;, line 7, in gadgets</span>' in html
    assert stage_timings({"timings": {"select": 0.5, "export": 1.5, "total": 2.0}})[1]["percent"] == 75.0


def _compile(error: dict[str, Any]) -> Any:
    from datetime import UTC, datetime

    from lsm.schemas.compile_reports import CompileOut

    return CompileOut(
        id="c" * 36,
        kind="full",
        status="failed",
        requested_ids=[],
        service_entities=[],
        exclude=[],
        instance_id=None,
        reason="test",
        merged_into=None,
        desired_state_version=None,
        report={"error": error},
        created_at=datetime.now(UTC),
        started_at=None,
        finished_at=None,
    )


def test_a_failed_export_has_a_retry_button_that_queues_it_again(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.fragile")
    pages = Pages(engine)
    engine.facades.inventory.import_instances(
        RequestContext.local(), "widget", "creating", [{"name": "w1", "explode": True}]
    )
    failed = pages.post("/api/v1/compiles", json={"kind": "full"}).json()
    engine.processing.drain()
    page = pages.get(f"/compiles/{failed['id']}")
    assert f'action="/compiles/{failed["id"]}/retry"' in page.text
    refused = pages.post(f"/compiles/{failed['id']}/retry", data={})  # no CSRF token
    assert_error_page(refused, 403, "CSRF")
    retried = pages.post(f"/compiles/{failed['id']}/retry", data={"csrf_token": pages.csrf(page)})
    assert retried.status_code == 303, retried.text
    new_id = retried.headers["location"].rsplit("/", 1)[1]
    assert pages.api(f"/api/v1/compiles/{new_id}")["reason"] == f"retry of the failed compile {failed['id']}"
    # a compile that did not fail has no button, and a retry of it is refused
    engine.processing.drain()
    ok = pages.post("/api/v1/compiles", json={"kind": "full"}).json()
    assert "/retry" not in pages.get(f"/compiles/{ok['id']}").text
    assert_error_page(
        pages.post(f"/compiles/{ok['id']}/retry", data={"csrf_token": pages.csrf(page)}), 409, "not failed"
    )
