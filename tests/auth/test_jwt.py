"""JWTs of an external identity provider: signature, audience, issuer and expiry checked (PyJWT)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.auth.conftest import make_secured

ISSUER, AUDIENCE = "https://idp.test/", "lsm"


def _rsa() -> tuple[Any, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return key, public.decode()


PRIVATE, PUBLIC = _rsa()
OTHER_PRIVATE, _ = _rsa()


@pytest.fixture
def idp_server(backend: str, tmp_path: Path) -> Iterator[str]:
    (tmp_path / "allowed").mkdir()
    key_file = tmp_path / "idp.pem"
    key_file.write_text(PUBLIC)
    auth = AuthConfig(
        enabled=True,
        jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
        jwt_key_file=str(key_file),
        jwt_algorithms=["RS256"],
    )
    engine = make_secured(backend, tmp_path, auth)
    try:
        with served_url(engine) as url:
            yield url
    finally:
        engine.stop()
        if not engine.db.is_sqlite:
            engine.db.drop_schema()
        engine.db.dispose()


def _token(key: Any = PRIVATE, **claims: Any) -> str:
    body = {
        "sub": "alice",
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": int(time.time()) + 300,
        "lsm_roles": {"default": "operator"},
        **claims,
    }
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm="RS256")


def _get(url: str, token: str, path: str = "/lsm/v1/service_inventory/note") -> httpx.Response:
    return httpx.get(url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_a_token_signed_with_the_configured_key_and_audience_passes_with_its_roles(idp_server: str) -> None:
    token = _token()
    assert _get(idp_server, token).status_code == 200
    created = httpx.post(
        idp_server + "/lsm/v1/service_inventory/note",
        json={"attributes": {"title": "by-alice"}},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert created.status_code == 200
    log = _get(idp_server, token, f"/lsm/v1/service_inventory/note/{created.json()['id']}/log").json()
    assert log[0]["actor"] == "jwt:alice"
    # the roles claim is all it holds: not an admin, and environment B is not visible
    assert _get(idp_server, token, "/api/v1/tokens").status_code == 403
    assert _get(idp_server, token, "/api/v1/environments/other").status_code == 404
    listed = _get(idp_server, _token(lsm_roles=["default:viewer", "other:viewer"]), "/api/v1/environments")
    assert sorted(e["name"] for e in listed.json()) == ["default", "other"]


@pytest.mark.parametrize(
    "claims",
    [
        {"aud": "someone-else"},
        {"iss": "https://evil.test/"},
        {"exp": int(time.time()) - 3600},
        {"exp": None},
        {"aud": None},
        {"key": OTHER_PRIVATE},
    ],
    ids=["wrong-audience", "wrong-issuer", "expired", "no-expiry", "no-audience", "other-key"],
)
def test_a_token_that_fails_a_check_is_401(idp_server: str, claims: dict[str, Any]) -> None:
    claims = dict(claims)  # the parameter is shared by both backends' runs
    key = claims.pop("key", PRIVATE)
    response = _get(idp_server, _token(key, **claims))
    assert response.status_code == 401
    assert response.json()["error"] == "unauthenticated"


def test_an_unsigned_token_is_401(idp_server: str) -> None:
    unsigned = jwt.encode(
        {"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300},
        None,  # type: ignore[arg-type]  # the "none" algorithm signs with no key
        algorithm="none",
    )
    assert _get(idp_server, unsigned).status_code == 401


def test_an_hs256_secret_works_and_the_roles_claim_may_be_a_list() -> None:
    from lsm.api.auth import Authenticator
    from lsm.errors import Unauthenticated
    from lsm.schemas.auth import Role

    secret = "s3cret-" * 6
    config = AuthConfig(
        enabled=True, jwt_issuer=ISSUER, jwt_audience=AUDIENCE, jwt_key=secret, jwt_algorithms=["HS256"]
    )
    authenticator = Authenticator(config, tokens=None)  # type: ignore[arg-type]  # JWTs never touch it
    claims = {"sub": "bob", "iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60}
    token = jwt.encode(
        {**claims, "lsm_roles": ["lab:admin", "prod:viewer", "x:root"]}, secret, algorithm="HS256"
    )
    principal = authenticator.principal(token)
    assert principal.actor == "jwt:bob"
    assert dict(principal.roles) == {"lab": Role.ADMIN, "prod": Role.VIEWER}
    with pytest.raises(Unauthenticated):
        authenticator.principal(jwt.encode(claims, "another-secret-" * 3, algorithm="HS256"))
    with pytest.raises(Unauthenticated):
        authenticator.principal(jwt.encode({**claims, "sub": ""}, secret, algorithm="HS256"))


def test_a_jwt_opens_a_console_session_and_an_expired_one_opens_none(idp_server: str) -> None:
    """A JWT signs in to the console like a token: the cookie is a session id, the pages see
    the JWT's actor and roles; an expired JWT is refused at the login."""
    with httpx.Client(base_url=idp_server, timeout=30) as browser:
        form = browser.get("/login").text
        csrf = form.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        login = browser.post("/login", data={"csrf_token": csrf, "token": _token()})
        assert login.status_code == 303
        assert "lsm_session" in browser.cookies and browser.cookies["lsm_session"].startswith("lsms_")
        page = browser.get("/inventory/note")
        assert page.status_code == 200 and "jwt:alice" in page.text
    with httpx.Client(base_url=idp_server, timeout=30) as late:
        form = late.get("/login").text
        csrf = form.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        expired = _token(exp=int(time.time()) - 5)
        assert late.post("/login", data={"csrf_token": csrf, "token": expired}).status_code == 401
