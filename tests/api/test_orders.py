"""``POST /lsm/v1/order`` over HTTP: what an order refuses (naming item and rule, writing
nothing), its items of every action, its ``Idempotency-Key`` and ``GET /lsm/v1/order/{id}``."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from lsm.runtime.wiring import ApiRuntime

ORDER = "/lsm/v1/order"


def router(ref: str, ip: str) -> dict[str, Any]:
    return {"action": "create", "entity": "router", "ref": ref, "attributes": {"mgmt_ip": ip, "name": ref}}


def port(ref: str, owner: str) -> dict[str, Any]:
    return {
        "action": "create",
        "entity": "port",
        "ref": ref,
        "attributes": {"name": ref, "router": {"$ref": owner}},
    }


def nothing_written(http: httpx.Client) -> bool:
    return all(http.get(f"/lsm/v1/service_inventory/{e}").json() == [] for e in ("router", "port", "note"))


def refused(http: httpx.Client, items: list[dict[str, Any]], status: int = 422) -> list[dict[str, Any]]:
    response = http.post(ORDER, json={"items": items})
    assert response.status_code == status, response.text
    assert nothing_written(http)
    listed: list[dict[str, Any]] = response.json()["items"]
    return listed


def test_a_dangling_local_name_is_refused_naming_item_and_rule(http: httpx.Client) -> None:
    (item,) = refused(http, [router("r1", "10.0.0.1"), port("p1", "r2")])
    assert (item["index"], item["ref"], item["rule"]) == (1, "p1", "dangling_ref")


def test_a_cycle_of_local_names_is_refused_naming_every_item_on_it(http: httpx.Client) -> None:
    a = {
        "action": "create",
        "entity": "note",
        "ref": "a",
        "attributes": {"title": "a", "text": {"$ref": "b"}},
        "wait_for": "draft",
    }
    b = {
        "action": "create",
        "entity": "note",
        "ref": "b",
        "attributes": {"title": "b", "text": {"$ref": "a"}},
        "wait_for": "draft",
    }
    items = refused(http, [a, b])
    assert {(i["index"], i["rule"]) for i in items} == {(0, "ref_cycle"), (1, "ref_cycle")}
    assert "0 (a) -> 1 (b) -> 0 (a)" in items[0]["message"]


def test_two_items_on_one_instance_are_refused(http: httpx.Client) -> None:
    made = http.post(ORDER, json={"items": [router("r1", "10.0.0.1")]}).json()
    r1 = made["items"][0]["instance_id"]
    twice = [
        {"action": "update", "entity": "router", "instance": r1, "attributes": {"mtu": 9000}},
        {"action": "delete", "entity": "router", "instance": "mgmt_ip=10.0.0.1"},
    ]
    response = http.post(ORDER, json={"items": twice})
    assert response.status_code == 422, response.text
    (item,) = response.json()["items"]
    assert (item["index"], item["rule"], item["other"]) == (1, "one_item_per_instance", 0)
    assert http.get(f"/lsm/v1/service_inventory/router/{r1}").json()["version"] == made["items"][0]["version"]


def test_an_unknown_entity_and_missing_fields_are_refused_together(http: httpx.Client) -> None:
    items = refused(
        http,
        [
            router("r1", "10.0.0.1"),
            {"action": "create", "entity": "switch", "attributes": {}},
            {"action": "delete", "entity": "router"},
        ],
    )
    assert [(i["index"], i["rule"]) for i in items] == [(1, "unknown_entity"), (2, "fields")]


def test_more_items_than_the_configured_limit_are_refused(http: httpx.Client, engine: ApiRuntime) -> None:
    response = http.put("/api/v1/environments/default/settings/max_order_items", json={"value": 2})
    assert response.status_code == 200, response.text
    response = http.post(ORDER, json={"items": [router(f"r{n}", f"10.0.0.{n}") for n in range(3)]})
    assert response.status_code == 422, response.text
    assert (response.json()["rule"], response.json()["limit"]) == ("max_order_items", 2)
    assert nothing_written(http)


def test_a_bad_attribute_refuses_the_whole_order_naming_its_item(http: httpx.Client) -> None:
    bad = {
        "action": "create",
        "entity": "note",
        "ref": "n",
        "attributes": {"title": "n", "priority": "high"},
        "wait_for": "draft",
    }
    (item,) = refused(http, [router("r1", "10.0.0.1"), port("p1", "r1"), bad])
    assert (item["index"], item["ref"], item["action"], item["entity"]) == (2, "n", "create", "note")
    assert item["errors"][0]["path"] == "priority"


def test_a_stale_version_is_a_409_naming_the_item(http: httpx.Client) -> None:
    made = http.post(ORDER, json={"items": [router("r1", "10.0.0.1")]}).json()["items"][0]
    update = {
        "action": "update",
        "entity": "router",
        "ref": "u",
        "instance": made["instance_id"],
        "current_version": made["version"] + 5,
        "attributes": {"mtu": 9000},
    }
    response = http.post(ORDER, json={"items": [router("r2", "10.0.0.2"), update]})
    assert response.status_code == 409, response.text
    body = response.json()
    assert (body["index"], body["ref"], body["action"]) == (1, "u", "update")
    assert http.get("/lsm/v1/service_inventory/router").json()[0]["id"] == made["instance_id"]


def test_items_of_every_action_apply_in_one_order(http: httpx.Client) -> None:
    first = http.post(
        ORDER,
        json={
            "items": [
                {"action": "create", "entity": "note", "attributes": {"title": t}, "wait_for": "draft"}
                for t in "abc"
            ]
        },
    ).json()
    a, b, c = (i["instance_id"] for i in first["items"])
    response = http.post(
        ORDER,
        json={
            "items": [
                {
                    "action": "update",
                    "entity": "note",
                    "instance": "title=a",
                    "attributes": {"text": "x"},
                    "wait_for": "draft",
                },
                {"action": "delete", "entity": "note", "instance": b, "wait_for": "archived"},
                {"action": "set_state", "entity": "note", "instance": c, "target_state": "published"},
            ]
        },
    )
    assert response.status_code == 200, response.text
    order = response.json()
    assert [i["instance_id"] for i in order["items"]] == [a, b, c]
    assert http.get(f"/lsm/v1/service_inventory/note/{a}").json()["candidate_attributes"]["text"] == "x"
    assert order["items"][2]["wait_for"] == "published"
    assert http.get(f"{ORDER}/{order['id']}").json() == order
    assert (order["status"], [i["outcome"] for i in order["items"]]) == ("done", ["done"] * 3)


def test_a_lifecycle_without_up_needs_the_state_to_wait_for(http: httpx.Client) -> None:
    (item,) = refused(http, [{"action": "create", "entity": "note", "attributes": {"title": "a"}}])
    assert (item["rule"], item["state"]) == ("unknown_state", "up")


def test_a_retried_order_with_its_idempotency_key_applies_nothing_twice(http: httpx.Client) -> None:
    body = {"items": [router("r1", "10.0.0.1"), port("p1", "r1")]}
    first = http.post(ORDER, json=body, headers={"Idempotency-Key": "k1"})
    again = http.post(ORDER, json=body, headers={"Idempotency-Key": "k1"})
    assert first.status_code == again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert len(http.get("/lsm/v1/service_inventory/port").json()) == 1

    other = http.post(ORDER, json={"items": [router("r2", "10.0.0.2")]}, headers={"Idempotency-Key": "k1"})
    assert other.status_code == 422
    assert other.json()["error"] == "idempotency_key_reused"


@pytest.mark.parametrize("order_id", ["00000000-0000-0000-0000-000000000000", "nope"])
def test_an_unknown_order_is_a_404(http: httpx.Client, order_id: str) -> None:
    assert http.get(f"{ORDER}/{order_id}").status_code == 404


def test_a_chosen_instance_id_is_kept_in_the_form_the_instance_is_created_under(http: httpx.Client) -> None:
    chosen = uuid.uuid4()
    item = {**router("r1", "10.0.0.1"), "instance_id": str(chosen).upper()}
    made = http.post(ORDER, json={"items": [item, port("p1", "r1")]})
    assert made.status_code == 200, made.text
    order = http.get(f"{ORDER}/{made.json()['id']}").json()
    assert order["items"][0]["instance_id"] == str(chosen)
    port_row = http.get(f"/lsm/v1/service_inventory/port/{order['items'][1]['instance_id']}").json()
    assert port_row["candidate_attributes"]["router"] == str(chosen)
    assert http.get(f"/lsm/v1/service_inventory/router/{chosen}").status_code == 200


def test_a_chosen_instance_id_that_is_not_a_uuid_is_refused_naming_the_item(http: httpx.Client) -> None:
    (item,) = refused(http, [{**router("r1", "10.0.0.1"), "instance_id": "not-a-uuid"}])
    assert (item["index"], item["ref"], item["rule"]) == (0, "r1", "instance_id")
