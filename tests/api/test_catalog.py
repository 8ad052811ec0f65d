"""The service catalog and lifecycle routes (docs/api.md §3)."""

from __future__ import annotations

import httpx


def test_the_catalog_lists_every_entity_with_lifecycle_identity_and_owner(http: httpx.Client) -> None:
    response = http.get("/lsm/v1/service_catalog")

    assert response.status_code == 200
    by_name = {e["name"]: e for e in response.json()}
    assert set(by_name) == {"router", "port", "note"}
    assert by_name["router"]["identity"] == "mgmt_ip"
    assert by_name["port"]["owner"] == "router"
    assert by_name["port"]["relation_to_owner"] == "router"
    assert by_name["port"]["lifecycle"]["name"] == "simple_with_delete_validate"
    mtu = next(a for a in by_name["router"]["attributes"] if a["name"] == "mtu")
    assert (mtu["modifier"], mtu["default"]) == ("rw+", 1500)


def test_the_catalog_counts_instances_per_state(http: httpx.Client) -> None:
    http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "t"}}).raise_for_status()

    note = http.get("/lsm/v1/service_catalog/note").json()

    assert note["instance_summary"] == {"draft": 1}


def test_an_entity_schema_is_a_json_schema_with_modifiers(http: httpx.Client) -> None:
    schema = http.get("/lsm/v1/service_catalog/router/schema").json()

    assert schema["properties"]["mtu"]["x-lsm-modifier"] == "rw+"
    assert "mgmt_ip" in schema["required"]


def test_an_unknown_entity_is_a_404(http: httpx.Client) -> None:
    for path in ("/lsm/v1/service_catalog/switch", "/lsm/v1/service_catalog/switch/schema"):
        response = http.get(path)
        assert response.status_code == 404
        assert "switch" in response.json()["message"]


def test_a_lifecycle_is_served_by_name(http: httpx.Client) -> None:
    simple = http.get("/lsm/v1/lifecycles/simple").json()
    unknown = http.get("/lsm/v1/lifecycles/nope")

    assert simple["initial_state"] == "start"
    assert "up" in [s["name"] for s in simple["states"]]
    assert unknown.status_code == 404
    assert "simple" in unknown.json()["known"]
