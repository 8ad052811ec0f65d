"""Every error answer has the one body format of docs/api.md §2, whatever raised it."""

from __future__ import annotations

import httpx
import pytest

from lsm.runtime.wiring import ApiRuntime

INVENTORY = "/lsm/v1/service_inventory"


def test_an_unexpected_field_in_a_body_is_a_422_naming_it(http: httpx.Client) -> None:
    response = http.post(f"{INVENTORY}/note", json={"attributes": {"title": "x"}, "colour": "red"})

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_input"
    assert body["errors"] == [{"path": "colour", "in": "body", "reason": "Extra inputs are not permitted"}]
    assert "body.colour" in body["message"]
    assert http.get(f"{INVENTORY}/note").json() == []


def test_every_offending_body_field_is_named(http: httpx.Client) -> None:
    response = http.patch(f"{INVENTORY}/note/title=x", json={"current_version": "one", "attributes": []})

    assert response.status_code == 422
    paths = sorted(e["path"] for e in response.json()["errors"])
    assert paths == ["attributes", "current_version"]


def test_a_body_that_is_not_json_is_a_422(http: httpx.Client) -> None:
    response = http.post(
        f"{INVENTORY}/note", content=b"{not json", headers={"content-type": "application/json"}
    )

    assert response.status_code == 422
    assert response.json()["error"] == "invalid_input"
    assert response.json()["errors"][0]["in"] == "body"


def test_an_unknown_path_is_a_404_in_the_error_format(http: httpx.Client) -> None:
    response = http.get("/lsm/v1/nothing/here")

    assert response.status_code == 404
    assert response.json() == {"error": "not_found", "message": "Not Found"}


def test_a_wrong_method_is_a_405_in_the_error_format(http: httpx.Client) -> None:
    response = http.put("/lsm/v1/service_catalog")

    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"
    assert "allow" in response.headers


def test_an_unexpected_exception_is_a_500_without_its_traceback(
    engine: ApiRuntime, http: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret detail of a bug")

    monkeypatch.setattr(engine.facades.catalog, "list_entities", broken)

    response = http.get("/lsm/v1/service_catalog")

    assert response.status_code == 500
    assert response.json() == {
        "error": "internal",
        "message": "internal server error; the server log has the details",
    }
    assert "secret" not in response.text and "Traceback" not in response.text
    assert http.get("/health").status_code == 200  # the server is still serving


def test_health_is_200_when_ready_and_503_before(engine: ApiRuntime, http: httpx.Client) -> None:
    assert http.get("/health").json() == {"status": "ok"}

    engine.ready = False
    try:
        health = http.get("/health")
        catalog = http.get("/lsm/v1/service_catalog")
    finally:
        engine.ready = True

    for response in (health, catalog):
        assert response.status_code == 503
        assert response.json()["error"] == "unavailable"
    assert http.get("/lsm/v1/service_catalog").status_code == 200


def test_openapi_lists_the_routes(http: httpx.Client) -> None:
    paths = http.get("/openapi.json").json()["paths"]

    assert "/lsm/v1/service_inventory/{entity}/{ref}" in paths
    assert set(paths["/lsm/v1/service_inventory/{entity}/{ref}"]) == {"get", "patch", "delete"}
    assert "/api/v1/compiles" in paths
