"""Error details (tracebacks, server paths) go to an authenticated admin who asks for them with
``X-LSM-Debug: 1``, and to nobody else (``lsm.api.disclosure.may_see_details``)."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request

from lsm.api import disclosure
from lsm.facade import RequestContext
from lsm.schemas.auth import Role
from tests.auth.conftest import Secured


def asking(context: RequestContext | None) -> Request:
    request = Request({"type": "http", "method": "GET", "path": "/", "headers": [(b"x-lsm-debug", b"1")]})
    if context is not None:
        request.state.authenticated = context
    return request


def caller(roles: dict[str, Role], environment: str | None = "default") -> RequestContext:
    return RequestContext(actor="token:t", environment=environment, roles=roles)


def test_only_an_authenticated_admin_of_the_environment_may_see_details() -> None:
    assert disclosure.shows_details(asking(caller({"*": Role.ADMIN})))
    assert disclosure.shows_details(asking(caller({"default": Role.ADMIN})))
    assert disclosure.shows_details(asking(caller({"*": Role.ADMIN}, environment=None)))
    assert not disclosure.shows_details(asking(caller({"default": Role.OPERATOR})))
    assert not disclosure.shows_details(asking(caller({"other": Role.ADMIN})))
    assert not disclosure.shows_details(asking(caller({"default": Role.ADMIN}, environment=None)))
    assert not disclosure.shows_details(asking(None))  # auth off, or refused before the caller was known


def test_an_admin_who_asks_sees_the_server_path_of_a_failed_model_and_one_who_does_not_ask_does_not(
    secured: Secured, tmp_path: Path
) -> None:
    broken = tmp_path / "allowed" / "broken_model.py"
    broken.write_text("raise RuntimeError('this model does not load')\n")
    with secured.client("admin") as admin:
        plain = admin.put("/api/v1/environments/default/model", json={"model": str(broken)})
        detailed = admin.put(
            "/api/v1/environments/default/model", json={"model": str(broken)}, headers={"X-LSM-Debug": "1"}
        )
    assert plain.status_code == detailed.status_code and 400 <= plain.status_code < 500
    assert str(tmp_path) not in plain.text
    assert str(tmp_path) in detailed.text
