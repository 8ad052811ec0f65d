"""``/api/v1/graph/...`` through the real app (uvicorn on 127.0.0.1), on both backends: owner
trees built by real creates, sets and requires over a real export, the lifecycle of the
environment; each format, the 404s naming what is unknown and the 422 of a too large graph."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator

import httpx
import pytest

from lsm.desired_state import ExportRequest, ResourceRecord
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.graph.dot_parse import parse

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    return engine_factory("tests.models.things")


@pytest.fixture
def http(engine: ApiRuntime) -> Iterator[httpx.Client]:
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def svg_ids(text: str) -> list[str]:
    root = ET.fromstring(text)
    return [g.get("data-id", "") for g in root.iter(f"{SVG}g") if (g.get("class") or "").startswith("node ")]


def make_tree(http: httpx.Client, name: str, parts: int) -> tuple[str, list[str]]:
    thing = http.post("/lsm/v1/service_inventory/thing", json={"attributes": {"name": name}})
    assert thing.status_code == 200, thing.text
    tid = thing.json()["id"]
    pids = []
    for n in range(parts):
        part = http.post(
            "/lsm/v1/service_inventory/part", json={"attributes": {"thing": tid, "label": f'p"{n}<'}}
        )
        assert part.status_code == 200, part.text
        pids.append(part.json()["id"])
    return tid, pids


def test_owner_tree_in_every_format(http: httpx.Client) -> None:
    tid, pids = make_tree(http, "alpha", 3)
    other, _ = make_tree(http, "beta", 1)

    svg = http.get("/api/v1/graph/owners", params={"id": pids[1]})
    assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
    assert sorted(svg_ids(svg.text)) == sorted([tid, *pids])  # the whole tree around a leaf

    dot = http.get("/api/v1/graph/owners", params={"entity": "thing", "id": "name=alpha", "format": "dot"})
    assert dot.headers["content-type"].startswith("text/vnd.graphviz")
    parsed = parse(dot.text)
    assert set(parsed.nodes) == {tid, *pids}
    assert sorted((s, t) for s, t, _ in parsed.edges) == sorted((tid, p) for p in pids)

    everything = http.get("/api/v1/graph/owners", params={"format": "json"}).json()
    assert {n["id"] for n in everything["nodes"]} >= {tid, other, *pids}
    by_id = {n["id"]: n for n in everything["nodes"]}
    assert by_id[tid]["color"] == "lightblue" and "root" in by_id[tid]["kind"]  # start: an info state
    assert {e["target"] for e in everything["edges"] if e["source"] == tid} == set(pids)

    only_things = http.get("/api/v1/graph/owners", params={"entity": "thing", "format": "json"}).json()
    assert {n["id"] for n in only_things["nodes"]} == {tid, other}


def test_unknown_names_are_404_naming_them(http: httpx.Client) -> None:
    missing = http.get("/api/v1/graph/owners", params={"id": "00000000-0000-0000-0000-000000000000"})
    assert missing.status_code == 404 and "00000000-0000-0000-0000-000000000000" in missing.json()["message"]
    entity = http.get("/api/v1/graph/owners", params={"entity": "nope"})
    assert entity.status_code == 404 and "nope" in entity.json()["message"]
    lifecycle = http.get("/api/v1/graph/lifecycle/nope")
    assert lifecycle.status_code == 404 and lifecycle.json()["lifecycle"] == "nope"
    no_version = http.get("/api/v1/graph/sets")
    assert no_version.status_code == 404
    bad_format = http.get("/api/v1/graph/lifecycle/simple", params={"format": "png"})
    assert bad_format.status_code == 422


def test_lifecycle_graph(http: httpx.Client) -> None:
    svg = http.get("/api/v1/graph/lifecycle/simple")
    assert svg.status_code == 200
    ids = svg_ids(svg.text)
    assert {"start", "up", "failed", "terminated"} <= set(ids) and len(ids) == len(set(ids))
    dot = parse(http.get("/api/v1/graph/lifecycle/simple", params={"format": "dot"}).text)
    assert dot.nodes["up"]["fillcolor"] == "palegreen"
    assert any(s == "start" and a.get("style") == "dashed" for s, _, a in dot.edges)  # an error edge


def export(engine: ApiRuntime) -> None:
    router = "net::Router[r1,name=r1]"
    port = "net::Interface[r1,name=eth0]"
    shared = "net::Vlan[r1,id=7]"
    engine.store.export(
        engine.context(None).env_id,
        ExportRequest(
            kind="full",
            sets={
                "tree-a": [
                    ResourceRecord(router, {"x": 1}, requires=(shared,)),
                    ResourceRecord(port, {"x": 2}, requires=(router,)),
                ],
                "tree-b": [ResourceRecord("net::Router[r2,name=r2]", {"x": 3})],
            },
            shared=[ResourceRecord(shared, {"vid": 7})],
        ),
    )


def test_sets_and_requires(engine: ApiRuntime, http: httpx.Client) -> None:
    export(engine)
    sets = http.get("/api/v1/graph/sets", params={"format": "json"}).json()
    edges = {(e["source"], e["target"]) for e in sets["edges"]}
    assert ("set:tree-a", "net::Interface[r1,name=eth0]") in edges
    assert ("set:", "net::Vlan[r1,id=7]") in edges
    assert len(sets["nodes"]) == 3 + 4
    assert ET.fromstring(http.get("/api/v1/graph/sets", params={"version": 1}).text).tag == f"{SVG}svg"

    requires = parse(http.get("/api/v1/graph/requires", params={"set": "tree-a", "format": "dot"}).text)
    assert set(requires.nodes) == {
        "net::Router[r1,name=r1]",
        "net::Interface[r1,name=eth0]",
        "net::Vlan[r1,id=7]",
    }
    assert "dashed" in requires.nodes["net::Vlan[r1,id=7]"]["style"]  # the shared one, marked
    assert {(s, t) for s, t, _ in requires.edges} == {
        ("net::Vlan[r1,id=7]", "net::Router[r1,name=r1]"),
        ("net::Router[r1,name=r1]", "net::Interface[r1,name=eth0]"),
    }
    unknown = http.get("/api/v1/graph/requires", params={"set": "tree-z"})
    assert (
        unknown.status_code == 404
        and unknown.json()["set"] == "tree-z"
        and "tree-a" in unknown.json()["known"]
    )
    assert http.get("/api/v1/graph/requires", params={"set": "tree-a", "version": 9}).status_code == 404


def test_a_too_large_graph_is_422_naming_the_limit(engine: ApiRuntime, http: httpx.Client) -> None:
    limit = 4
    engine.facades.graphs.limit = limit  # the same check, at a size a test can reach
    make_tree(http, "big", limit)
    answer = http.get("/api/v1/graph/owners")
    assert answer.status_code == 422
    body = answer.json()
    assert body["limit"] == limit and "entity=" in body["message"] and "id=" in body["message"]
    export(engine)
    assert http.get("/api/v1/graph/sets").status_code == 422
    assert http.get("/api/v1/graph/requires", params={"set": "tree-a"}).status_code == 200
