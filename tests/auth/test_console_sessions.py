"""Console sessions are their own revocable records (docs/console.md §2): the cookie is a session
id, never the token; logging out, revoking the token and the session's expiry each end it.
The real app served on 127.0.0.1, every backend; a browser is an ``httpx.Client`` with cookies."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import httpx

from lsm.schemas.auth import DEFAULT_SESSION_LIFETIME
from lsm.store.auth import sessions
from lsm.store.auth.tables import ConsoleSessionRow
from lsm.store.auth.tokens import token_hash
from tests.auth.conftest import Secured


def csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', page)
    assert found is not None
    return found.group(1)


@contextmanager
def signed_in(secured: Secured, token: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=secured.url, timeout=30) as browser:
        login = browser.post("/login", data={"csrf_token": csrf(browser.get("/login").text), "token": token})
        assert login.status_code == 303, login.text
        yield browser


def with_cookie(secured: Secured, cookie: str) -> httpx.Response:
    """The catalog page asked for with only ``cookie`` as the session (a copied cookie)."""
    with httpx.Client(base_url=secured.url, timeout=30, cookies={"lsm_session": cookie}) as other:
        return other.get("/catalog")


def session_rows(secured: Secured, token_id: str) -> list[ConsoleSessionRow]:
    with secured.engine.db.read() as session:
        return sessions.sessions_of(session, token_id)


def test_the_cookie_is_a_session_id_stored_only_as_its_hash(secured: Secured) -> None:
    token_id, token = secured.token("browser", {"default": "viewer"})
    with signed_in(secured, token) as browser:
        cookie = browser.cookies["lsm_session"]
        assert cookie.startswith("lsms_") and token not in cookie
        (row,) = session_rows(secured, token_id)
        assert row.id_hash == token_hash(cookie) and cookie not in row.id_hash
        assert row.actor.startswith("token:browser#")
        assert browser.get("/catalog").status_code == 200
        assert with_cookie(secured, token).status_code == 401  # a token is no session


def test_logging_out_ends_the_session_for_every_copy_of_its_cookie(secured: Secured) -> None:
    token_id, token = secured.token("leaving", {"default": "viewer"})
    with signed_in(secured, token) as browser:
        cookie = browser.cookies["lsm_session"]
        assert with_cookie(secured, cookie).status_code == 200  # a copy works while signed in
        out = browser.post("/logout", data={"csrf_token": csrf(browser.get("/catalog").text)})
        assert out.status_code == 303
    refused = with_cookie(secured, cookie)
    assert refused.status_code == 401 and 'action="/login"' in refused.text
    assert session_rows(secured, token_id) == []
    with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {token}"}) as api:
        assert api.get("/lsm/v1/service_catalog").status_code == 200  # the token itself lives on


def test_revoking_the_token_ends_its_sessions(secured: Secured) -> None:
    token_id, token = secured.token("revoked", {"default": "operator"})
    with signed_in(secured, token) as first, signed_in(secured, token) as second:
        assert len(session_rows(secured, token_id)) == 2
        with secured.client("admin") as admin:
            assert admin.delete(f"/api/v1/tokens/{token_id}").status_code == 200
        assert [first.get("/catalog").status_code, second.get("/catalog").status_code] == [401, 401]
    assert session_rows(secured, token_id) == []


def test_a_session_expires_on_its_own(secured: Secured) -> None:
    tokens = secured.engine.facades.tokens
    _, token = secured.token("tired", {"default": "viewer"})
    with signed_in(secured, token) as browser:
        clock, now = tokens.clock, tokens.clock()
        try:
            tokens.clock = lambda: now + timedelta(seconds=DEFAULT_SESSION_LIFETIME - 60)
            assert browser.get("/catalog").status_code == 200
            tokens.clock = lambda: now + timedelta(seconds=DEFAULT_SESSION_LIFETIME + 60)
            assert browser.get("/catalog").status_code == 401
        finally:
            tokens.clock = clock


def test_a_session_ends_with_its_token(secured: Secured) -> None:
    _, token = secured.token("short", {"default": "viewer"}, expires_in=120)
    tokens = secured.engine.facades.tokens
    with signed_in(secured, token) as browser:
        clock, now = tokens.clock, tokens.clock()
        try:
            tokens.clock = lambda: now + timedelta(seconds=300)  # the token expired, the session not
            assert browser.get("/catalog").status_code == 401
        finally:
            tokens.clock = clock
