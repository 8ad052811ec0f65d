"""``/docs`` and ``/openapi.json`` follow the authentication setting (docs/api.md §13): a viewer
token, or a console session, or nothing. The real app served on 127.0.0.1, every backend."""

from __future__ import annotations

import re

import httpx

from lsm.facade import RequestContext
from tests.auth.conftest import Secured

DOCUMENTS = ("/openapi.json", "/docs")


def test_without_a_credential_the_documents_are_refused(secured: Secured) -> None:
    with secured.client(None) as anonymous:
        document = anonymous.get("/openapi.json")
        page = anonymous.get("/docs")
        asset = anonymous.get("/docs/assets/swagger-ui.css")
    assert document.status_code == 401 and document.json()["error"] == "unauthenticated"
    assert page.status_code == 401 and 'action="/login"' in page.text  # the login form, back here
    assert 'name="next" value="/docs"' in page.text
    assert asset.status_code == 200  # swagger-ui's own files: nothing of ours


def test_a_bad_token_is_refused_like_none(secured: Secured) -> None:
    token_id, token = secured.token("soon-revoked", {"default": "viewer"})
    secured.engine.facades.tokens.revoke(RequestContext.local(), token_id)
    for credential in (token, "lsm_not-a-token"):
        with httpx.Client(base_url=secured.url, headers={"Authorization": f"Bearer {credential}"}) as http:
            assert [http.get(path).status_code for path in DOCUMENTS] == [401, 401]


def test_a_token_with_any_role_reads_them(secured: Secured) -> None:
    for who in ("viewer", "other", "admin"):
        with secured.client(who) as http:
            document = http.get("/openapi.json")
            page = http.get("/docs")
        assert document.status_code == 200 and "/lsm/v1/service_catalog" in document.json()["paths"]
        assert page.status_code == 200 and "/openapi.json" in page.text


def test_a_console_session_reads_them(secured: Secured) -> None:
    with httpx.Client(base_url=secured.url, timeout=30) as browser:
        form = browser.get("/login").text
        csrf = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', form)
        assert csrf is not None
        login = browser.post("/login", data={"csrf_token": csrf.group(1), "token": secured.tokens["viewer"]})
        assert login.status_code == 303
        assert [browser.get(path).status_code for path in DOCUMENTS] == [200, 200]
