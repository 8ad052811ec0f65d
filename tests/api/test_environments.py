"""Environments, settings and the ``X-LSM-Environment`` header (docs/api.md §7)."""

from __future__ import annotations

import httpx

from tests.api.fixtures import MODEL

HEADER = "X-LSM-Environment"


def test_the_header_selects_the_environment_of_every_inventory_request(http: httpx.Client) -> None:
    created = http.post("/api/v1/environments", json={"name": "lab", "model": str(MODEL)})
    assert created.status_code == 200, created.text
    lab = created.json()

    in_lab = http.post(
        "/lsm/v1/service_inventory/note", json={"attributes": {"title": "t"}}, headers={HEADER: "lab"}
    ).json()

    assert http.get("/lsm/v1/service_inventory/note").json() == []
    assert [i["id"] for i in http.get("/lsm/v1/service_inventory/note", headers={HEADER: "lab"}).json()] == [
        in_lab["id"]
    ]
    by_id = http.get(f"/lsm/v1/service_inventory/note/{in_lab['id']}", headers={HEADER: lab["id"]})
    assert by_id.status_code == 200
    assert http.get(f"/lsm/v1/service_inventory/note/{in_lab['id']}").status_code == 404
    # the same identity is free in another environment
    assert http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "t"}}).status_code == 200


def test_an_unknown_environment_is_a_404(http: httpx.Client) -> None:
    response = http.get("/lsm/v1/service_inventory/note", headers={HEADER: "nowhere"})

    assert response.status_code == 404
    assert "nowhere" in response.json()["message"]
    assert http.get("/api/v1/environments/nowhere").status_code == 404


def test_environments_are_listed_and_read(http: httpx.Client) -> None:
    names = [e["name"] for e in http.get("/api/v1/environments").json()]
    default = http.get("/api/v1/environments/default").json()

    assert names == ["default"]
    assert default["name"] == "default"
    assert default["settings"]["partial_compiles"] is True


def test_an_environment_needs_a_name(http: httpx.Client) -> None:
    response = http.post("/api/v1/environments", json={"name": ""})

    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "name"


def test_a_setting_is_set_and_read_back(http: httpx.Client) -> None:
    response = http.put("/api/v1/environments/default/settings/recompile_backoff", json={"value": 2.5})

    assert response.status_code == 200, response.text
    settings = http.get("/api/v1/environments/default/settings").json()
    assert settings["recompile_backoff"]["value"] == 2.5
    assert http.get("/api/v1/environments/default").json()["settings"]["recompile_backoff"] == 2.5


def test_unknown_settings_and_ill_typed_values_are_422(http: httpx.Client) -> None:
    unknown = http.put("/api/v1/environments/default/settings/colour", json={"value": "red"})
    ill_typed = http.put(
        "/api/v1/environments/default/settings/desired_state_retention", json={"value": "many"}
    )
    no_value = http.put("/api/v1/environments/default/settings/partial_compiles", json={})

    assert (unknown.status_code, unknown.json()["error"], unknown.json()["key"]) == (
        422,
        "invalid_setting",
        "colour",
    )
    assert (ill_typed.status_code, ill_typed.json()["error"]) == (422, "invalid_setting")
    assert (no_value.status_code, no_value.json()["errors"][0]["path"]) == (422, "value")
    assert http.get("/api/v1/environments/default/settings").json()["desired_state_retention"]["value"] == 100
