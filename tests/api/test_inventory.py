"""The service inventory routes over HTTP, against the real engine (docs/api.md §4)."""

from __future__ import annotations

from typing import Any

import httpx

INVENTORY = "/lsm/v1/service_inventory"


def create(http: httpx.Client, entity: str, attributes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    response = http.post(f"{INVENTORY}/{entity}", json={"attributes": attributes, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def get(http: httpx.Client, entity: str, ref: str) -> dict[str, Any]:
    response = http.get(f"{INVENTORY}/{entity}/{ref}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_create_answers_the_instance_at_version_1_in_the_initial_state(http: httpx.Client) -> None:
    router = create(http, "router", {"mgmt_ip": "10.0.0.1", "name": "edge-1"})

    assert router["version"] == 1
    assert router["state"] == "start"
    assert router["service_entity"] == "router"
    assert router["candidate_attributes"] == {"mgmt_ip": "10.0.0.1", "name": "edge-1", "mtu": 1500}
    assert router["active_attributes"] is None and router["rollback_attributes"] is None
    assert router["deleted"] is False and router["owner"] is None
    assert set(router) >= {
        "id",
        "service_entity",
        "version",
        "desired_state_version",
        "state",
        "candidate_attributes",
        "active_attributes",
        "rollback_attributes",
        "deleted",
        "created_at",
        "last_updated",
        "owner",
    }


def test_create_with_a_chosen_id_and_an_owned_instance_points_to_its_owner(http: httpx.Client) -> None:
    chosen = "6b1a2f1e-6a53-4a8e-9d36-0c1f5b0c9a11"
    router = create(http, "router", {"mgmt_ip": "10.0.0.2", "name": "edge-2"}, service_instance_id=chosen)
    port = create(http, "port", {"name": "eth0", "router": router["id"]})

    assert router["id"] == chosen
    assert port["owner"] == chosen
    assert get(http, "port", port["id"])["candidate_attributes"]["router"] == chosen


def test_an_instance_is_found_by_its_identity_attribute(http: httpx.Client) -> None:
    router = create(http, "router", {"mgmt_ip": "10.0.0.3", "name": "edge-3"})

    assert get(http, "router", "mgmt_ip=10.0.0.3")["id"] == router["id"]
    missing = http.get(f"{INVENTORY}/router/mgmt_ip=10.9.9.9")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


def test_a_duplicate_identity_is_a_409_naming_the_value(http: httpx.Client) -> None:
    create(http, "router", {"mgmt_ip": "10.0.0.4", "name": "a"})

    response = http.post(f"{INVENTORY}/router", json={"attributes": {"mgmt_ip": "10.0.0.4", "name": "b"}})

    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "identity_conflict"
    assert "10.0.0.4" in body["message"]
    assert len(http.get(f"{INVENTORY}/router").json()) == 1


def test_an_unknown_attribute_is_a_422_naming_it(http: httpx.Client) -> None:
    response = http.post(
        f"{INVENTORY}/router", json={"attributes": {"mgmt_ip": "10.0.0.5", "name": "r", "colour": "red"}}
    )

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_attributes"
    assert [e["path"] for e in body["errors"]] == ["colour"]
    assert http.get(f"{INVENTORY}/router").json() == []


def test_a_wrongly_typed_attribute_is_a_422_naming_it(http: httpx.Client) -> None:
    response = http.post(
        f"{INVENTORY}/router", json={"attributes": {"mgmt_ip": "10.0.0.6", "name": "r", "mtu": "big"}}
    )

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_attributes"
    assert [e["path"] for e in body["errors"]] == ["mtu"]
    assert all(e["reason"] for e in body["errors"])


def test_a_missing_required_attribute_is_a_422_naming_it(http: httpx.Client) -> None:
    response = http.post(f"{INVENTORY}/router", json={"attributes": {"mgmt_ip": "10.0.0.7"}})

    assert response.status_code == 422
    assert "name" in [e["path"] for e in response.json()["errors"]]


def test_an_update_merges_into_the_candidate_set_and_bumps_the_version(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n1", "text": "hello"})

    response = http.patch(
        f"{INVENTORY}/note/{note['id']}", json={"current_version": 1, "attributes": {"priority": 3}}
    )

    assert response.status_code == 200, response.text
    updated = response.json()
    assert updated["version"] == 2
    assert updated["state"] == "draft"
    assert updated["candidate_attributes"] == {"title": "n1", "text": "hello", "priority": 3}


def test_an_update_with_a_stale_version_is_a_409_and_changes_nothing(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n2"})
    path = f"{INVENTORY}/note/{note['id']}"
    assert http.patch(path, json={"current_version": 1, "attributes": {"text": "v2"}}).status_code == 200
    before = get(http, "note", note["id"])

    response = http.patch(path, json={"current_version": 1, "attributes": {"text": "stale"}})

    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "version_conflict"
    after = get(http, "note", note["id"])
    assert after == before
    assert after["candidate_attributes"]["text"] == "v2"


def test_set_state_with_a_stale_version_is_a_409_and_changes_nothing(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n3"})

    response = http.post(
        f"{INVENTORY}/note/{note['id']}/state", json={"current_version": 7, "target_state": "published"}
    )

    assert response.status_code == 409
    assert response.json()["error"] == "version_conflict"
    # the one-instance route adds the deployment progress that change answers leave out
    after = get(http, "note", note["id"])
    assert after.pop("deployment_progress") == {
        "total": 0,
        "deployed": 0,
        "failed": 0,
        "skipped": 0,
        "waiting": 0,
    }
    assert after == {k: v for k, v in note.items() if k != "deployment_progress"}


def test_set_state_moves_the_instance_and_records_the_message(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n4"})

    response = http.post(
        f"{INVENTORY}/note/{note['id']}/state",
        json={"current_version": 1, "target_state": "published", "message": "looks good"},
    )

    assert response.status_code == 200, response.text
    assert response.json()["state"] == "published"
    assert response.json()["active_attributes"] == {"title": "n4", "text": "", "priority": 0}
    log = http.get(f"{INVENTORY}/note/{note['id']}/log").json()
    assert log[-1]["message"] == "looks good"


def test_changing_an_rw_attribute_after_creation_is_a_422_naming_it(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n5"})

    response = http.patch(
        f"{INVENTORY}/note/{note['id']}", json={"current_version": 1, "attributes": {"title": "renamed"}}
    )

    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "invalid_attributes"
    assert [e["path"] for e in body["errors"]] == ["title"]
    assert get(http, "note", note["id"])["version"] == 1


def test_an_update_in_a_state_without_on_update_is_a_409_listing_what_is_allowed(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n6"})
    published = http.post(
        f"{INVENTORY}/note/{note['id']}/state", json={"current_version": 1, "target_state": "published"}
    ).json()

    response = http.patch(
        f"{INVENTORY}/note/{note['id']}",
        json={"current_version": published["version"], "attributes": {"text": "x"}},
    )

    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "transfer_not_allowed"
    assert "published" in body["message"]
    allowed = body["allowed"]
    assert {"trigger": "api_set_state", "target": "draft"} in [
        {"trigger": a["trigger"], "target": a["target"]} for a in allowed
    ]
    assert all(a["trigger"] != "on_update" for a in allowed)
    assert get(http, "note", note["id"])["version"] == published["version"]


def test_the_bundled_lifecycle_refuses_updates_in_start(http: httpx.Client) -> None:
    router = create(http, "router", {"mgmt_ip": "10.0.0.8", "name": "r"})

    response = http.patch(
        f"{INVENTORY}/router/{router['id']}", json={"current_version": 1, "attributes": {"mtu": 9000}}
    )

    assert response.status_code == 409
    assert response.json()["error"] == "transfer_not_allowed"
    assert "allowed" in response.json()


def test_delete_needs_the_current_version_and_hides_the_instance(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n7"})
    path = f"{INVENTORY}/note/{note['id']}"

    stale = http.delete(path, params={"current_version": 5})
    assert stale.status_code == 409
    missing = http.delete(path)
    assert missing.status_code == 422
    assert missing.json()["errors"][0] == {
        "path": "current_version",
        "in": "query",
        "reason": "Field required",
    }

    deleted = http.delete(path, params={"current_version": 1})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["state"] == "archived"
    assert deleted.json()["deleted"] is True
    assert http.get(f"{INVENTORY}/note").json() == []
    listed = http.get(f"{INVENTORY}/note", params={"include_deleted": "true"}).json()
    assert [i["id"] for i in listed] == [note["id"]]


def test_the_event_log_records_every_step_oldest_first(http: httpx.Client) -> None:
    note = create(http, "note", {"title": "n8"})
    path = f"{INVENTORY}/note/{note['id']}"
    http.patch(path, json={"current_version": 1, "attributes": {"text": "draft 2"}}).raise_for_status()
    http.post(f"{path}/state", json={"current_version": 2, "target_state": "published"}).raise_for_status()
    http.post(f"{path}/state", json={"current_version": 3, "target_state": "draft"}).raise_for_status()
    http.delete(path, params={"current_version": 4}).raise_for_status()

    log = http.get(f"{path}/log").json()

    steps = [(e["source"], e["target"], e["trigger"], e["version"]) for e in log]
    assert steps == [
        (None, "draft", steps[0][2], 1),
        ("draft", "draft", "on_update", 2),
        ("draft", "published", "api_set_state", 3),
        ("published", "draft", "api_set_state", 4),
        ("draft", "archived", "on_delete", 5),
    ]
    assert all(e["instance_id"] == note["id"] and not e["is_error"] for e in log)


def test_listing_filters_by_repeated_state_and_pages(http: httpx.Client) -> None:
    notes = [create(http, "note", {"title": f"l{i}"}) for i in range(4)]
    for note in notes[:2]:
        http.post(
            f"{INVENTORY}/note/{note['id']}/state", json={"current_version": 1, "target_state": "published"}
        ).raise_for_status()

    published = http.get(f"{INVENTORY}/note", params={"state": "published"}).json()
    both = http.get(f"{INVENTORY}/note", params=[("state", "published"), ("state", "draft")]).json()
    page = http.get(f"{INVENTORY}/note", params={"limit": 2, "offset": 1, "sort": "created_at"}).json()

    assert sorted(i["id"] for i in published) == sorted(n["id"] for n in notes[:2])
    assert len(both) == 4
    assert [i["id"] for i in page] == [n["id"] for n in notes[1:3]]


def test_a_bad_limit_is_a_422_naming_the_query_parameter(http: httpx.Client) -> None:
    response = http.get(f"{INVENTORY}/note", params={"limit": 0})

    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "limit"
    assert response.json()["errors"][0]["in"] == "query"


def test_unknown_entity_and_unknown_instance_are_404(http: httpx.Client) -> None:
    entity = http.get(f"{INVENTORY}/switch")
    instance = http.get(f"{INVENTORY}/router/00000000-0000-0000-0000-000000000000")
    post = http.post(f"{INVENTORY}/switch", json={"attributes": {}})

    for response in (entity, instance, post):
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"
        assert response.json()["message"]
    assert "switch" in entity.json()["message"]


def test_resources_and_diagnose_answer_for_an_instance(http: httpx.Client) -> None:
    router = create(http, "router", {"mgmt_ip": "10.0.0.9", "name": "r"})

    resources = http.get(f"{INVENTORY}/router/{router['id']}/resources")
    diagnose = http.get(f"{INVENTORY}/router/{router['id']}/diagnose")

    assert resources.status_code == 200 and isinstance(resources.json(), list)
    assert diagnose.status_code == 200
    assert diagnose.json()["state"] == get(http, "router", router["id"])["state"]


def test_invalid_creation_options_and_sort_keys_are_422(http: httpx.Client) -> None:
    bad_id = http.post(f"{INVENTORY}/note", json={"attributes": {"title": "a"}, "service_instance_id": "x"})
    bad_state = http.post(
        f"{INVENTORY}/note", json={"attributes": {"title": "b"}, "initial_state": "published"}
    )
    bad_sort = http.get(f"{INVENTORY}/note", params={"sort": "colour"})

    assert (bad_id.status_code, bad_id.json()["errors"][0]["path"]) == (422, "service_instance_id")
    assert bad_state.status_code == 422 and "published" in bad_state.json()["message"]
    assert bad_sort.status_code == 422 and "colour" in bad_sort.json()["message"]
    assert http.get(f"{INVENTORY}/note").json() == []
