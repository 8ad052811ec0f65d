"""Expert mode over HTTP with authentication on: the setting, the admin role, the reason, the
version, the event line and the audit record (docs/api.md "Expert mode")."""

from __future__ import annotations

from typing import Any

import httpx

from tests.auth.conftest import Secured

INVENTORY = "/lsm/v1/service_inventory"


def _order(http: httpx.Client, entity: str, attributes: dict[str, Any]) -> dict[str, Any]:
    made = http.post(f"{INVENTORY}/{entity}", json={"attributes": attributes})
    assert made.status_code == 200, made.text
    body: dict[str, Any] = made.json()
    return body


def _expert_mode(secured: Secured, on: bool) -> None:
    with secured.client("admin") as admin:
        admin.put("/api/v1/environments/default/settings/expert_mode", json={"value": on}).raise_for_status()


def _get(http: httpx.Client, entity: str, ref: str) -> dict[str, Any]:
    found = http.get(f"{INVENTORY}/{entity}/{ref}")
    assert found.status_code == 200, found.text
    body: dict[str, Any] = found.json()
    return body


def test_force_state_is_refused_while_off_then_changes_state_with_log_and_audit(secured: Secured) -> None:
    with secured.client("admin") as admin:
        note = _order(admin, "note", {"title": "stuck"})
        path = f"{INVENTORY}/note/{note['id']}/expert/state"
        body = {"current_version": 1, "state": "published", "reason": "ticket 42: stuck draft"}

        off = admin.post(path, json=body)
        assert off.status_code == 409
        assert off.json()["error"] == "expert_mode_off" and off.json()["setting"] == "expert_mode"
        assert "expert_mode" in off.json()["message"]
        assert _get(admin, "note", note["id"])["version"] == 1  # nothing written

        _expert_mode(secured, True)
        forced = admin.post(path, json=body, headers={"X-Request-ID": "req-expert"})
        assert forced.status_code == 200, forced.text
        assert (forced.json()["state"], forced.json()["version"]) == ("published", 2)

        last = admin.get(f"{INVENTORY}/note/{note['id']}/log").json()[-1]
        actor = f"token:admin#{secured.ids['admin'][:8]}"
        assert (last["source"], last["target"], last["trigger"]) == ("draft", "published", "expert")
        assert "ticket 42: stuck draft" in last["message"] and last["actor"] == actor

        audit = admin.get("/api/v1/audit", params={"action": "expert"}).json()
        assert [(a["action"], a["actor"], a["target"], a["request_id"]) for a in audit] == [
            ("expert.state", actor, note["id"], "req-expert")
        ]
        assert audit[0]["details"]["reason"] == "ticket 42: stuck draft"
        assert (audit[0]["details"]["state"], audit[0]["details"]["target_state"]) == ("draft", "published")

        stale = admin.post(path, json={**body, "state": "draft"})
        assert stale.status_code == 409 and stale.json()["error"] == "version_conflict"


def test_bad_expert_calls_are_typed_4xx_naming_the_field_and_write_nothing(secured: Secured) -> None:
    _expert_mode(secured, True)
    with secured.client("admin") as admin:
        note = _order(admin, "note", {"title": "careful"})
        base = f"{INVENTORY}/note/{note['id']}/expert"
        unknown = admin.post(f"{base}/state", json={"current_version": 1, "state": "nowhere", "reason": "x"})
        assert unknown.status_code == 422 and unknown.json()["field"] == "state"
        assert "published" in unknown.json()["known"]
        missing = admin.post(f"{base}/state", json={"current_version": 1, "state": "published"})
        assert missing.status_code == 422 and "reason" in missing.text
        blank = admin.post(f"{base}/state", json={"current_version": 1, "state": "published", "reason": "  "})
        assert blank.status_code == 422 and blank.json()["field"] == "reason"
        text = admin.post(f"{base}/state", json={"current_version": "1", "state": "published", "reason": "x"})
        assert text.status_code == 422 and "current_version" in text.text
        broken = admin.post(
            f"{base}/attributes",
            json={"current_version": 1, "reason": "fix", "active": {"title": "careful", "priority": "high"}},
        )
        assert broken.status_code == 422 and broken.json()["error"] == "invalid_attributes"
        assert [e["path"] for e in broken.json()["errors"]] == ["active.priority"]
        renamed = admin.post(
            f"{base}/attributes",
            json={"current_version": 1, "reason": "fix", "candidate": {"title": "other"}},
        )
        assert renamed.status_code == 422 and renamed.json()["errors"][0]["path"] == "candidate.title"
        none = admin.post(f"{base}/attributes", json={"current_version": 1, "reason": "fix"})
        assert none.status_code == 422
        assert admin.get("/api/v1/audit", params={"action": "expert"}).json() == []
    with secured.client("operator") as operator:
        body = {"current_version": 1, "state": "published", "reason": "x"}
        denied = operator.post(f"{base}/state", json=body)
        assert denied.status_code == 403 and denied.json()["role"] == "admin"
    with secured.client("admin") as admin:
        after = _get(admin, "note", note["id"])
        assert (after["version"], after["state"]) == (1, "draft")
        assert [line["trigger"] for line in admin.get(f"{base[: -len('/expert')]}/log").json()] == ["create"]


def test_expert_attributes_replace_the_sets_given_and_leave_the_others(secured: Secured) -> None:
    _expert_mode(secured, True)
    with secured.client("env_admin") as env_admin:
        note = _order(env_admin, "note", {"title": "sets", "text": "draft text"})
        written = env_admin.post(
            f"{INVENTORY}/note/title=sets/expert/attributes",
            json={
                "current_version": 1,
                "reason": "restore from backup",
                "active": {"title": "sets", "text": "restored"},
                "rollback": None,
            },
        )
        assert written.status_code == 200, written.text
        out = written.json()
        assert out["version"] == 2 and out["state"] == "draft"
        assert out["candidate_attributes"] == note["candidate_attributes"]
        assert out["active_attributes"] == {"title": "sets", "text": "restored", "priority": 0}
        assert out["rollback_attributes"] is None
        last = env_admin.get(f"{INVENTORY}/note/{note['id']}/log").json()[-1]
        assert last["trigger"] == "expert" and "restore from backup" in last["message"]


def test_expert_destroy_terminates_without_the_lifecycle(secured: Secured) -> None:
    _expert_mode(secured, True)
    with secured.client("admin") as admin:
        router = _order(admin, "router", {"mgmt_ip": "10.9.0.1", "name": "gone"})
        left = admin.post(
            f"{INVENTORY}/router/{router['id']}/expert/destroy",
            json={"current_version": 1, "reason": "device scrapped", "purge_resources": False},
        )
        assert left.status_code == 200, left.text
        assert (left.json()["state"], left.json()["deleted"]) == ("terminated", True)
        assert left.json()["desired_state_version"] == router["desired_state_version"]  # left as it is

        other = _order(admin, "router", {"mgmt_ip": "10.9.0.2", "name": "purged"})
        purged = admin.post(
            f"{INVENTORY}/router/{other['id']}/expert/destroy",
            json={"current_version": 1, "reason": "device scrapped", "purge_resources": True},
        )
        assert purged.status_code == 200, purged.text
        assert purged.json()["desired_state_version"] == other["desired_state_version"] + 1
        again = admin.post(
            f"{INVENTORY}/router/{other['id']}/expert/destroy",
            json={"current_version": 2, "reason": "twice", "purge_resources": True},
        )
        assert again.status_code == 409 and again.json()["error"] == "transfer_not_allowed"
        audit = admin.get("/api/v1/audit", params={"action": "expert.destroy"}).json()
        assert sorted(a["details"]["purge_resources"] for a in audit) == [False, True]
