"""``GET /api/v1/audit``: who did what, when, under which request id, with filters and paging."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.auth.conftest import Secured


def test_changes_record_actor_and_request_id_and_are_listed_with_filters(secured: Secured) -> None:
    actor = {who: f"token:{who}#{secured.ids[who][:8]}" for who in secured.ids}
    with secured.client("env_admin") as env_admin:
        env_admin.put(
            "/api/v1/environments/default/settings/recompile_backoff",
            json={"value": 2.0},
            headers={"X-Request-ID": "req-setting"},
        ).raise_for_status()
    with secured.client("operator") as operator:
        note = operator.post(
            "/lsm/v1/service_inventory/note",
            json={"attributes": {"title": "audited"}},
            headers={"X-Request-ID": "req-order"},
        ).json()
        operator.post(
            "/api/v1/compiles", json={"kind": "full"}, headers={"X-Request-ID": "req-compile"}
        ).raise_for_status()
    with secured.client("other") as other:
        other.post(
            "/lsm/v1/service_inventory/note",
            json={"attributes": {"title": "in-b"}},
            headers={"X-Lsm-Environment": "other", "X-Request-ID": "req-b"},
        ).raise_for_status()
        refused = other.get("/api/v1/audit")
    with secured.client("admin") as admin:
        admin.post("/api/v1/environments", json={"name": "lab"}, headers={"X-Request-ID": "req-env"})
        everything = admin.get("/api/v1/audit").json()
        by_request = {line["request_id"]: line for line in everything if line["request_id"]}
        instance_lines = admin.get("/api/v1/audit", params={"action": "instance"}).json()
        by_actor = admin.get("/api/v1/audit", params={"actor": actor["operator"]}).json()
        future = admin.get(
            "/api/v1/audit", params={"since": (datetime.now(UTC) + timedelta(hours=1)).isoformat()}
        )
        in_b = admin.get("/api/v1/audit", params={"environment": "other"}).json()
        pages = [admin.get("/api/v1/audit", params={"limit": 2, "offset": o}).json() for o in (0, 2)]
    with secured.client("env_admin") as env_admin:
        own = env_admin.get("/api/v1/audit").json()

    setting = by_request["req-setting"]
    assert (setting["actor"], setting["action"], setting["target"], setting["environment"]) == (
        actor["env_admin"],
        "setting.set",
        "recompile_backoff",
        "default",
    )
    assert setting["details"] == {"value": 2.0, "previous": None}
    order = by_request["req-order"]
    assert (order["actor"], order["target"], order["action"].startswith("instance.")) == (
        actor["operator"],
        note["id"],
        True,
    )
    assert by_request["req-compile"]["action"] == "compile.full"
    assert by_request["req-compile"]["actor"] == actor["operator"]
    assert (by_request["req-env"]["action"], by_request["req-env"]["target"]) == ("environment.create", "lab")
    assert any(line["action"] == "token.create" for line in everything)

    assert instance_lines and all(line["action"].startswith("instance.") for line in instance_lines)
    assert by_actor and {line["actor"] for line in by_actor} == {actor["operator"]}
    assert future.status_code == 200 and future.json() == []
    assert in_b and {line["environment"] for line in in_b} == {"other"}
    assert pages[0] + pages[1] == everything[:4]
    times = [line["time"] for line in everything]
    assert times == sorted(times, reverse=True)

    # an environment's admin sees its environment only; an operator sees nothing
    assert own and {line["environment"] for line in own} == {"default"}
    assert refused.status_code == 403


def test_every_page_is_the_slice_of_the_whole_list(secured: Secured) -> None:
    with secured.client("admin") as admin:
        for n in range(4):
            admin.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": f"p{n}"}})
            admin.put("/api/v1/environments/other/settings/recompile_backoff", json={"value": n})
        everything = admin.get("/api/v1/audit", params={"limit": 1000}).json()
        for limit, offset in [(1, 0), (3, 2), (5, 7), (2, len(everything) - 1), (4, len(everything) + 3)]:
            page = admin.get("/api/v1/audit", params={"limit": limit, "offset": offset}).json()
            assert page == everything[offset : offset + limit], (limit, offset)
    assert len(everything) >= 12
