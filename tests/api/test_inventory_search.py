"""Searching the service inventory (``GET /lsm/v1/service_inventory/{entity}`` with ``identity``,
``attribute`` and ``sort``) through the real app on both backends: the identity as a substring
in any case, an attribute by its typed value in the candidate or the active set, several
matches together, the sort, and a typed 422 naming the field for each search it can not run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.store.database import Database
from lsm.testing import served_url
from tests.api.fixtures import LIFECYCLES, MODEL

INVENTORY = "/lsm/v1/service_inventory"


@pytest.fixture
def http(db: Database) -> Iterator[httpx.Client]:
    """The API tests' model (``tests.api.netmodel``) served over the test database (each backend)."""
    config = ServerConfig(database_url=db.url, model=str(MODEL), lifecycle_dirs=[str(LIFECYCLES)])
    engine = build_api(config, db=db)
    engine.start()
    try:
        with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
            yield client
    finally:
        engine.stop()


def create(http: httpx.Client, entity: str, attributes: dict[str, Any]) -> dict[str, Any]:
    response = http.post(f"{INVENTORY}/{entity}", json={"attributes": attributes})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def found(http: httpx.Client, entity: str, **params: Any) -> list[str]:
    """The identity values (else names) the search answers, in its order."""
    response = http.get(f"{INVENTORY}/{entity}", params=params)
    assert response.status_code == 200, response.text
    shown = [i["candidate_attributes"] or i["active_attributes"] for i in response.json()]
    return [a.get("mgmt_ip") or a["name"] for a in shown]


def refused(http: httpx.Client, entity: str, **params: Any) -> dict[str, Any]:
    response = http.get(f"{INVENTORY}/{entity}", params=params)
    assert response.status_code == 422, response.text
    body: dict[str, Any] = response.json()
    return body


def test_search_by_identity_and_attribute_with_sort(http: httpx.Client) -> None:
    edge1 = create(http, "router", {"mgmt_ip": "10.0.0.1", "name": "Edge-1"})
    create(http, "router", {"mgmt_ip": "10.0.0.2", "name": "edge-2", "mtu": 9000})
    create(http, "router", {"mgmt_ip": "192.168.5.10", "name": "core", "mtu": 9000})
    create(http, "port", {"router": edge1["id"], "name": "eth0", "vlan": 10})
    create(http, "port", {"router": edge1["id"], "name": "eth1"})

    assert found(http, "router", identity="10.0.0") == ["10.0.0.1", "10.0.0.2"]
    assert found(http, "router", identity="5.1", sort="-identity") == ["192.168.5.10"]
    assert found(http, "router", attribute="mtu=9000", sort="-identity") == ["192.168.5.10", "10.0.0.2"]
    assert found(http, "router", attribute=["mtu=9000", "name=core"]) == ["192.168.5.10"]
    assert found(http, "router", attribute="mtu=9000", identity="10.") == ["10.0.0.2"]
    assert found(http, "router", attribute="name=Edge-1") == ["10.0.0.1"]  # exact, case kept
    assert found(http, "router", attribute="name=edge-1") == []
    assert found(http, "router", attribute="mtu=1500", identity="%") == []  # % is a character here
    # a reference by the id it holds; an optional integer by its number, or by null
    assert found(http, "port", attribute=f"router={edge1['id']}") == ["eth0", "eth1"]
    assert found(http, "port", attribute="vlan=10") == ["eth0"]
    assert found(http, "port", attribute="vlan=null") == ["eth1"]


def test_search_reads_the_active_set_too(http: httpx.Client) -> None:
    """Publishing a note promotes its candidate set to active: it is still found by its text."""
    published = create(http, "note", {"title": "a", "text": "hello", "priority": 2})
    create(http, "note", {"title": "b", "text": "hello", "priority": 3})
    moved = http.post(
        f"{INVENTORY}/note/{published['id']}/state", json={"current_version": 1, "target_state": "published"}
    )
    assert moved.status_code == 200, moved.text
    note = moved.json()
    assert note["candidate_attributes"] is None and note["active_attributes"]["text"] == "hello"

    def titles(**params: Any) -> list[str]:
        answer = http.get(f"{INVENTORY}/note", params={"sort": "identity", **params})
        assert answer.status_code == 200, answer.text
        return [(i["candidate_attributes"] or i["active_attributes"])["title"] for i in answer.json()]

    assert titles(attribute="text=hello") == ["a", "b"]
    assert titles(attribute="priority=2") == ["a"]
    assert titles(attribute=["text=hello", "priority=3"], sort="-identity") == ["b"]


@pytest.mark.parametrize(
    ("entity", "params", "field"),
    [
        ("router", {"attribute": "mtu"}, "attribute"),  # not name=value
        ("router", {"attribute": "=1"}, "attribute"),
        ("router", {"attribute": "colour=red"}, "attribute"),  # no such attribute
        ("router", {"attribute": "mtu=big"}, "attribute"),  # not an int
        ("router", {"attribute": [f"mtu={n}" for n in range(11)]}, "attribute"),  # too many
        ("router", {"attribute": "name=" + "x" * 501}, "attribute"),
        ("router", {"identity": "x" * 256}, "identity"),
        ("port", {"identity": "eth"}, "identity"),  # a port has no identity
        ("router", {"sort": "colour"}, "sort"),
    ],
)
def test_a_search_it_can_not_run_is_a_422_naming_the_field(
    http: httpx.Client, entity: str, params: dict[str, Any], field: str
) -> None:
    body = refused(http, entity, **params)
    assert field in str(body), body
