"""``POST /lsm/v1/service_inventory/{entity}/bulk`` over HTTP: statuses and error bodies."""

from __future__ import annotations

import httpx

from lsm.schemas.bulk import MAX_BULK_ITEMS

BULK = "/lsm/v1/service_inventory/note/bulk"


def notes(http: httpx.Client) -> list[dict[str, object]]:
    response = http.get("/lsm/v1/service_inventory/note")
    assert response.status_code == 200
    listed: list[dict[str, object]] = response.json()
    return listed


def test_bulk_creates_and_updates_and_answers_them_in_order(http: httpx.Client) -> None:
    first = http.post(BULK, json={"create": [{"attributes": {"title": "a"}}]}).json()["created"][0]
    response = http.post(
        BULK,
        json={
            "create": [{"attributes": {"title": "b"}}, {"attributes": {"title": "c"}}],
            "update": [{"id": "title=a", "current_version": first["version"], "attributes": {"text": "x"}}],
        },
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert [n["candidate_attributes"]["title"] for n in body["created"]] == ["b", "c"]
    assert body["updated"][0]["id"] == first["id"]
    assert body["updated"][0]["version"] == first["version"] + 1


def test_every_invalid_item_is_listed_in_one_422_and_nothing_is_written(http: httpx.Client) -> None:
    response = http.post(
        BULK,
        json={
            "create": [{"attributes": {"title": "ok"}}, {"attributes": {}}, {"attributes": {"title": 3}}],
            "update": [{"id": "title=none", "current_version": 1, "attributes": {}}],
        },
    )

    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "invalid_input"
    assert [(i["op"], i["index"]) for i in body["items"]] == [("create", 1), ("create", 2), ("update", 0)]
    assert body["items"][0]["errors"][0]["path"] == "title"
    assert notes(http) == []


def test_a_version_conflict_is_a_409_naming_index_and_id(http: httpx.Client) -> None:
    created = http.post(BULK, json={"create": [{"attributes": {"title": "a"}}]}).json()["created"][0]
    update = [{"id": created["id"], "current_version": created["version"] + 3, "attributes": {"text": "x"}}]
    response = http.post(BULK, json={"create": [{"attributes": {"title": "b"}}], "update": update})

    assert response.status_code == 409, response.text
    body = response.json()
    assert (body["error"], body["op"], body["index"], body["id"]) == (
        "version_conflict",
        "update",
        0,
        created["id"],
    )
    assert [n["id"] for n in notes(http)] == [created["id"]]


def test_an_unknown_id_is_a_404(http: httpx.Client) -> None:
    update = [{"id": "00000000-0000-0000-0000-000000000001", "current_version": 1, "attributes": {}}]
    response = http.post(BULK, json={"update": update})
    assert response.status_code == 404, response.text
    assert response.json()["index"] == 0


def test_more_items_than_the_limit_are_a_422(http: httpx.Client) -> None:
    response = http.post(BULK, json={"create": [{"attributes": {"title": "x"}}] * (MAX_BULK_ITEMS + 1)})
    assert response.status_code == 422
    assert notes(http) == []
