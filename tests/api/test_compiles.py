"""Compile requests and reports over HTTP (docs/api.md §5), with the worker stopped so that
requests stay queued where the test can see them."""

from __future__ import annotations

import httpx

from lsm.runtime.wiring import ApiRuntime
from lsm.store.tables import CompileRow


def test_a_requested_compile_is_queued_and_listed(http: httpx.Client) -> None:
    response = http.post("/api/v1/compiles", json={"kind": "full"})

    assert response.status_code == 200, response.text
    report = response.json()
    assert (report["kind"], report["status"]) == ("full", "queued")
    assert report["id"] in [c["id"] for c in http.get("/api/v1/compiles").json()]
    assert http.get(f"/api/v1/compiles/{report['id']}").json()["id"] == report["id"]


def test_a_partial_compile_records_ids_entities_and_exclusions(http: httpx.Client) -> None:
    router = http.post(
        "/lsm/v1/service_inventory/router", json={"attributes": {"mgmt_ip": "10.1.0.1", "name": "r"}}
    ).json()

    report = http.post(
        "/api/v1/compiles",
        json={
            "kind": "partial",
            "instance_ids": [router["id"]],
            "service_entities": ["port"],
            "exclude": ["x"],
        },
    ).json()

    assert report["kind"] == "partial"
    assert report["requested_ids"] == [router["id"]]
    assert report["service_entities"] == ["port"]
    assert report["exclude"] == ["x"]


def test_invalid_compile_requests_are_refused(http: httpx.Client) -> None:
    bad_kind = http.post("/api/v1/compiles", json={"kind": "validation"})
    empty_partial = http.post("/api/v1/compiles", json={"kind": "partial"})
    unknown_entity = http.post("/api/v1/compiles", json={"kind": "partial", "service_entities": ["switch"]})

    assert (bad_kind.status_code, bad_kind.json()["errors"][0]["path"]) == (422, "kind")
    assert empty_partial.status_code == 422
    assert unknown_entity.status_code == 404


def test_an_unknown_compile_is_a_404(http: httpx.Client) -> None:
    response = http.get("/api/v1/compiles/00000000-0000-0000-0000-000000000000")

    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_a_full_compile_can_ask_to_refine_everything(http: httpx.Client, engine: ApiRuntime) -> None:
    """``incremental: false`` reaches the request that the worker runs (see
    tests/compiler/test_incremental_full.py for what it does)."""
    complete = http.post("/api/v1/compiles", json={"kind": "full", "incremental": False}).json()
    default = http.post("/api/v1/compiles", json={"kind": "full"}).json()

    with engine.db.read() as session:
        rows = {c: session.get(CompileRow, c) for c in (complete["id"], default["id"])}
    assert (row := rows[complete["id"]]) is not None and row.params == {"incremental": False}
    assert (row := rows[default["id"]]) is not None and row.params == {}


def test_selector_settings_are_checked_on_write(http: httpx.Client) -> None:
    bad = http.put("/api/v1/environments/default/settings/selector", json={"value": "no_such_selector"})
    assert bad.status_code == 422 and "no_such_selector" in bad.json()["message"]
    missing = http.put("/api/v1/environments/default/settings/selector", json={"value": {"name": "state"}})
    assert missing.status_code == 422 and "states" in missing.json()["message"]
    union = ["owner_tree", {"name": "relation_closure"}]
    good = http.put("/api/v1/environments/default/settings/selector", json={"value": union})
    assert good.status_code == 200 and good.json()["selector"]["value"] == union


def test_a_partial_compile_takes_a_selector_and_explain_queues_nothing(http: httpx.Client) -> None:
    router = http.post(
        "/lsm/v1/service_inventory/router", json={"attributes": {"mgmt_ip": "10.1.0.9", "name": "r"}}
    ).json()
    before = len(http.get("/api/v1/compiles", params={"limit": 1000}).json())
    explained = http.post(
        "/api/v1/compiles",
        json={
            "kind": "partial",
            "instance_ids": [router["id"]],
            "selector": "relation_closure",
            "explain": True,
        },
    )
    assert explained.status_code == 200, explained.text
    assert explained.json()["selector"] == "relation_closure"
    assert explained.json()["requested"] == [router["id"]]
    assert len(http.get("/api/v1/compiles", params={"limit": 1000}).json()) == before
    queued = http.post(
        "/api/v1/compiles", json={"kind": "partial", "instance_ids": [router["id"]], "selector": "owner_tree"}
    )
    assert queued.status_code == 200 and queued.json()["status"] == "queued"
    unknown = http.post(
        "/api/v1/compiles", json={"kind": "partial", "instance_ids": [router["id"]], "selector": "nope"}
    )
    assert unknown.status_code == 422
    names = [s["name"] for s in http.get("/api/v1/compiles/selectors").json()]
    assert "owner_tree" in names and "relation_closure" in names


def test_the_compile_list_filters_by_kind_and_status(http: httpx.Client, engine: ApiRuntime) -> None:
    """``kind`` and ``status`` narrow the list (a poller asks ``status=queued&limit=1``); an
    unknown value is a 422 naming the parameter."""
    queued = http.post("/api/v1/compiles", json={"kind": "full"}).json()
    failed = http.post("/api/v1/compiles", json={"kind": "full"}).json()
    with engine.db.write() as session:
        row = session.get(CompileRow, failed["id"])
        assert row is not None
        row.status = "failed"
        session.add(row)

    def ids(**params: str | int) -> list[str]:
        response = http.get("/api/v1/compiles", params=params)
        assert response.status_code == 200, response.text
        return [c["id"] for c in response.json()]

    assert ids(status="queued") == [queued["id"]]
    assert ids(status="failed") == [failed["id"]]
    assert ids(status="running") == []
    assert ids(status="queued", limit=1) == [queued["id"]]
    assert ids(kind="full") == [failed["id"], queued["id"]]
    assert ids(kind="full", status="failed") == [failed["id"]]
    assert ids(kind="validation") == []
    for name, value in (("status", "done"), ("kind", "export")):
        refused = http.get("/api/v1/compiles", params={name: value})
        assert refused.status_code == 422, refused.text
        assert [(e["in"], e["path"]) for e in refused.json()["errors"]] == [("query", name)]
