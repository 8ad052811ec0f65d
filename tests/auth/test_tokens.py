"""Authentication with API tokens: 401 without one, expiry, revocation, tenant isolation."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from lsm.client import Client
from lsm.errors import NotFound, Unauthenticated
from lsm.store.auth.tables import TokenRow
from lsm.testing import async_client
from tests.api.fixtures import engine, http, url
from tests.auth.conftest import Secured

__all__ = ["engine", "http", "url"]


def test_without_a_token_everything_but_health_is_401_with_the_error_body(secured: Secured) -> None:
    with secured.client(None) as anonymous:
        health = anonymous.get("/health")
        refused = anonymous.get("/lsm/v1/service_inventory/note")
        garbage = anonymous.get("/api/v1/environments", headers={"Authorization": "Bearer lsm_nope"})
        basic = anonymous.get("/api/v1/environments", headers={"Authorization": "Basic YTpi"})

    assert health.status_code == 200
    for response in (refused, garbage, basic):
        assert response.status_code == 401
        assert response.json()["error"] == "unauthenticated"
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.headers["x-request-id"]


def test_a_token_is_stored_hashed_shown_once_and_works_through_the_client(secured: Secured) -> None:
    with secured.client("admin") as admin:
        created = admin.post(
            "/api/v1/tokens", json={"name": "ci", "roles": {"default": "operator"}, "expires_in": 3600}
        )
        listed = admin.get("/api/v1/tokens").json()
    assert created.status_code == 200, created.text
    secret = created.json()["token"]
    assert secret.startswith("lsm_") and len(secret) > 40
    assert all("token" not in t for t in listed)
    with secured.engine.db.read() as session:
        hashes = [row.token_hash for row in session.exec(select(TokenRow))]
    assert secret not in hashes and all(len(h) == 64 for h in hashes)

    with Client(secured.url, token=secret) as client:
        note = client.create_instance("note", {"title": "by-ci"})
        assert client.get_instance("note", note["id"])["id"] == note["id"]
    with Client(secured.url, token="lsm_" + "x" * 43) as stranger:
        try:
            stranger.catalog()
        except Unauthenticated as exc:
            assert "unknown, expired or revoked" in exc.message
        else:
            raise AssertionError("an unknown token was accepted")


def test_an_expired_token_is_refused(secured: Secured) -> None:
    tokens = secured.engine.facades.tokens
    _, secret = secured.token("short", {"default": "viewer"}, expires_in=60)
    with secured.client(None) as client:
        headers = {"Authorization": f"Bearer {secret}"}
        assert client.get("/lsm/v1/service_catalog", headers=headers).status_code == 200
        real_clock = tokens.clock
        tokens.clock = lambda: real_clock() + timedelta(seconds=61)
        try:
            expired = client.get("/lsm/v1/service_catalog", headers=headers)
        finally:
            tokens.clock = real_clock
    assert expired.status_code == 401
    with secured.client("admin") as admin:
        past = admin.post(
            "/api/v1/tokens",
            json={
                "name": "late",
                "roles": {"default": "viewer"},
                "expires_at": (datetime.now(UTC) - timedelta(days=1)).isoformat(),
            },
        )
    assert (past.status_code, past.json()["field"]) == (422, "expires_at")


def test_a_revoked_token_is_refused_from_its_next_request_on(secured: Secured) -> None:
    token_id, secret = secured.token("leaving", {"default": "operator"})
    headers = {"Authorization": f"Bearer {secret}"}
    with secured.client(None) as client:
        assert client.get("/lsm/v1/service_catalog", headers=headers).status_code == 200
        with secured.client("admin") as admin:
            revoked = admin.delete(f"/api/v1/tokens/{token_id}")
            again = admin.delete(f"/api/v1/tokens/{token_id}")
            unknown = admin.delete("/api/v1/tokens/00000000-0000-0000-0000-000000000000")
        after = client.get("/lsm/v1/service_catalog", headers=headers)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert again.json()["revoked_at"] == revoked.json()["revoked_at"]
    assert unknown.status_code == 404
    assert after.status_code == 401


def test_a_token_of_environment_b_sees_nothing_of_a(secured: Secured) -> None:
    with secured.client("admin") as admin:
        in_a = admin.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "secret"}}).json()
    b = {"X-LSM-Environment": "other"}
    a = {"X-LSM-Environment": "default"}
    with secured.client("other") as other:
        names = [e["name"] for e in other.get("/api/v1/environments").json()]
        env_a = other.get("/api/v1/environments/default")
        nowhere = other.get("/api/v1/environments/nowhere")
        a_by_id = other.get(f"/api/v1/environments/{secured.engine.context('default').env_id}")
        listing_a = other.get("/lsm/v1/service_inventory/note", headers=a)
        default_env = other.get("/lsm/v1/service_inventory/note")  # no header: the default one, A
        instance_via_b = other.get(f"/lsm/v1/service_inventory/note/{in_a['id']}", headers=b)
        settings_a = other.get("/api/v1/environments/default/settings")
        events_a = other.get("/api/v1/events", headers=a)
        own = other.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "mine"}}, headers=b)
        listing_b = other.get("/lsm/v1/service_inventory/note", headers=b).json()

    assert names == ["other"]
    for response in (env_a, a_by_id, listing_a, default_env, settings_a, events_a):
        assert response.status_code == 404
        assert response.json()["error"] == "not_found"
        assert "unknown environment" in response.json()["message"]
    # no existence leak: a visible-to-others environment answers like one that does not exist
    assert env_a.json().keys() == nowhere.json().keys()
    assert nowhere.status_code == 404
    assert instance_via_b.status_code == 404  # A's instance is not in B
    assert own.status_code == 200
    assert in_a["id"] not in {i["id"] for i in listing_b}


def test_the_client_raises_not_found_for_an_environment_it_may_not_see(secured: Secured) -> None:
    with Client(secured.url, "default", token=secured.tokens["other"]) as client:
        try:
            client.list_instances("note")
        except NotFound:
            pass
        else:
            raise AssertionError("environment A answered a token of B")


def test_a_role_too_low_is_403_naming_the_role(secured: Secured) -> None:
    with secured.client("viewer") as viewer:
        read = viewer.get("/lsm/v1/service_inventory/note")
        write = viewer.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "no"}})
    with secured.client("operator") as operator:
        setting = operator.put("/api/v1/environments/default/settings/recompile_backoff", json={"value": 1})
    assert read.status_code == 200
    assert (write.status_code, write.json()["error"], write.json()["role"]) == (403, "forbidden", "operator")
    assert (setting.status_code, setting.json()["role"]) == (403, "admin")


def test_tokens_name_known_environments_only(secured: Secured) -> None:
    with secured.client("admin") as admin:
        response = admin.post("/api/v1/tokens", json={"name": "x", "roles": {"nowhere": "viewer"}})
        bad_role = admin.post("/api/v1/tokens", json={"name": "x", "roles": {"default": "root"}})
    assert (response.status_code, response.json()["field"]) == (422, "roles.nowhere")
    assert bad_role.status_code == 422


def test_auth_off_keeps_every_caller_local(http: httpx.Client) -> None:
    """The embedded default: no token, no set-up, every route as before."""
    assert http.get("/api/v1/environments").status_code == 200
    created = http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "t"}}).json()
    log = http.get(f"/lsm/v1/service_inventory/note/{created['id']}/log").json()
    assert log[0]["actor"] == "local"


def test_the_async_client_and_lsm_testing_take_a_token(
    secured: Secured, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LSM_TOKEN", raising=False)
    monkeypatch.setenv("LSM_TOKEN_FILE", str(tmp_path / "no-token-file"))

    async def scenario() -> tuple[int, str]:
        async with async_client(secured.engine, token=secured.tokens["viewer"]) as client:
            catalog = await client.catalog()
        async with async_client(secured.engine, token=None) as anonymous:
            try:
                await anonymous.catalog()
            except Unauthenticated as exc:
                return len(catalog), exc.kind
        return len(catalog), "accepted"

    assert asyncio.run(scenario()) == (3, "unauthenticated")
