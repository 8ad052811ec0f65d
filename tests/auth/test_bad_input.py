"""The routes this change adds answer bad text with a 422 naming the field, on both backends
(PostgreSQL refuses NUL in text; nothing encodes a lone surrogate), and store nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.auth.conftest import Secured

JSON = {"content-type": "application/json"}
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/v1/tokens", {"json": {"name": "a\x00b", "roles": {"*": "viewer"}}}, "name"),
    ("POST", "/api/v1/tokens", {"json": {"name": "ab", "roles": {"x\x00": "viewer"}}}, "roles"),
    ("POST", "/api/v1/tokens", {"content": b'{"name": "\\ud800", "roles": {"*": "viewer"}}'}, "name"),
    ("POST", "/api/v1/tokens", {"content": b'{"name": "ab", "roles": {"\\ud800": "viewer"}}'}, "roles"),
    (
        "POST",
        "/api/v1/tokens",
        {"json": {"name": "ab", "roles": {"*": "viewer"}, "expires_in": 2**70}},
        "expires_in",
    ),
    ("DELETE", "/api/v1/tokens/a%00b", {}, "token_id"),
    ("GET", "/api/v1/audit", {"params": {"actor": "a\x00"}}, "actor"),
    ("GET", "/api/v1/audit", {"params": {"action": "a\x00"}}, "action"),
    ("GET", "/api/v1/audit", {"params": {"environment": "a\x00"}}, "environment"),
    ("GET", "/api/v1/audit", {"params": {"offset": 2**70}}, "offset"),
    ("PUT", "/api/v1/environments/default/model", {"json": {"model": "a\x00"}}, "model"),
    ("PUT", "/api/v1/environments/default/model", {"content": b'{"model": "\\ud800"}'}, "model"),
    ("POST", "/api/v1/environments", {"json": {"name": "zz", "model": "a\x00"}}, "model"),
]


@pytest.mark.parametrize(("method", "path", "request_", "field"), CASES)
def test_bad_text_is_a_422_naming_the_field(
    secured: Secured, method: str, path: str, request_: dict[str, Any], field: str
) -> None:
    with secured.client("admin") as admin:
        before = (admin.get("/api/v1/tokens").json(), admin.get("/api/v1/environments").json())
        if "content" in request_:
            request_ = {**request_, "headers": JSON}
        response = admin.request(method, path, **request_)
        after = (admin.get("/api/v1/tokens").json(), admin.get("/api/v1/environments").json())
    assert response.status_code == 422, response.text
    body = response.json()
    assert body.get("field") == field or any(e["path"].startswith(field) for e in body.get("errors", []))
    assert after == before
