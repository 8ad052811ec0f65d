"""Every route x every kind of caller -> the status class its declared role implies.

The table ``EXPECTED`` names each route's need by hand; the test enumerates the app's routes
(its OpenAPI paths, and the routers ``create_app`` includes: this FastAPI includes routers
lazily, so ``app.routes`` holds the routers, not the routes), so a new route missing from the
table fails here (and one without a ``require``/``public`` declaration fails at ``create_app``).

Callers: no token, a viewer, an operator and an admin of environment A (the default one), an
operator of environment B only, an admin of everything.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import httpx
import pytest

from lsm.api.access import Access, Public, Scope, route_table
from lsm.api.app import ROUTERS
from lsm.api.console import CONSOLE_ROUTERS
from lsm.schemas.auth import Role
from tests.api.fixtures import MODEL
from tests.auth.conftest import Secured

V, OP, A = Role.VIEWER, Role.OPERATOR, Role.ADMIN
ENV, GLOBAL, SOME, PUBLIC = "env", "global", "some", "public"

#: (method, path) -> (role needed, scope)
EXPECTED: dict[tuple[str, str], tuple[Role | None, str]] = {
    ("GET", "/health"): (None, PUBLIC),
    ("GET", "/lsm/v1/service_catalog"): (V, ENV),
    ("GET", "/lsm/v1/service_catalog/{entity}"): (V, ENV),
    ("GET", "/lsm/v1/service_catalog/{entity}/schema"): (V, ENV),
    ("GET", "/lsm/v1/lifecycles/{name}"): (V, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}"): (OP, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}/bulk"): (OP, ENV),
    ("GET", "/lsm/v1/service_inventory/{entity}"): (V, ENV),
    ("GET", "/lsm/v1/service_inventory/{entity}/{ref}"): (V, ENV),
    ("PATCH", "/lsm/v1/service_inventory/{entity}/{ref}"): (OP, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/state"): (OP, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/expert/state"): (A, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/expert/attributes"): (A, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/expert/destroy"): (A, ENV),
    ("DELETE", "/lsm/v1/service_inventory/{entity}/{ref}"): (OP, ENV),
    ("GET", "/lsm/v1/service_inventory/{entity}/{ref}/log"): (V, ENV),
    ("GET", "/lsm/v1/service_inventory/{entity}/{ref}/resources"): (V, ENV),
    ("GET", "/lsm/v1/service_inventory/{entity}/{ref}/diagnose"): (V, ENV),
    ("POST", "/api/v1/compiles"): (OP, ENV),
    ("GET", "/api/v1/compiles"): (V, ENV),
    ("GET", "/api/v1/compiles/selectors"): (V, ENV),
    ("GET", "/api/v1/compiles/{compile_id}"): (V, ENV),
    ("POST", "/api/v1/compiles/{compile_id}/retry"): (OP, ENV),
    ("GET", "/api/v1/desired_state"): (V, ENV),
    ("PUT", "/api/v1/desired_state"): (OP, ENV),
    ("GET", "/api/v1/desired_state/{version}"): (V, ENV),
    ("GET", "/api/v1/desired_state/{version}/resources"): (V, ENV),
    ("GET", "/api/v1/desired_state/{version}/diff/{other}"): (V, ENV),
    ("GET", "/api/v1/graph/lifecycle/{name}"): (V, ENV),
    ("GET", "/api/v1/graph/owners"): (V, ENV),
    ("GET", "/api/v1/graph/sets"): (V, ENV),
    ("GET", "/api/v1/graph/requires"): (V, ENV),
    ("GET", "/api/v1/environments"): (V, SOME),
    ("POST", "/api/v1/environments"): (A, GLOBAL),
    ("GET", "/api/v1/environments/{env}"): (V, ENV),
    ("PUT", "/api/v1/environments/{env}/model"): (A, ENV),
    ("GET", "/api/v1/environments/{env}/settings"): (V, ENV),
    ("PUT", "/api/v1/environments/{env}/settings/{key}"): (A, ENV),
    ("GET", "/api/v1/events"): (V, ENV),
    ("GET", "/api/v1/resources"): (V, ENV),
    ("GET", "/api/v1/resources/{resource_id}"): (V, ENV),
    ("GET", "/api/v1/resources/{resource_id}/actions"): (V, ENV),
    ("GET", "/api/v1/deploy"): (V, ENV),
    ("POST", "/api/v1/deploy"): (OP, ENV),
    ("GET", "/api/v1/compliance"): (V, ENV),
    ("POST", "/api/v1/compliance"): (OP, ENV),
    ("GET", "/api/v1/compliance/{report_id}"): (V, ENV),
    ("POST", "/lsm/v1/order"): (OP, ENV),
    ("GET", "/lsm/v1/order/{order_id}"): (V, ENV),
    ("GET", "/api/v1/discovered"): (V, ENV),
    ("GET", "/api/v1/discovered/{resource_id}"): (V, ENV),
    ("POST", "/lsm/v1/service_inventory/{entity}/adopt"): (OP, ENV),
    ("POST", "/api/v1/tokens"): (A, GLOBAL),
    ("GET", "/api/v1/tokens"): (A, GLOBAL),
    ("DELETE", "/api/v1/tokens/{token_id}"): (A, GLOBAL),
    ("GET", "/api/v1/audit"): (A, SOME),
    ("GET", "/metrics"): (V, GLOBAL),
    ("POST", "/api/v1/environments/{env}/halt"): (A, ENV),
    ("POST", "/api/v1/environments/{env}/resume"): (A, ENV),
    ("POST", "/api/v1/environments/{env}/agents/{name}/pause"): (A, ENV),
    ("POST", "/api/v1/environments/{env}/agents/{name}/unpause"): (A, ENV),
    ("POST", "/api/v1/webhooks"): (A, ENV),
    ("GET", "/api/v1/webhooks"): (OP, ENV),
    ("GET", "/api/v1/webhooks/{webhook_id}"): (OP, ENV),
    ("DELETE", "/api/v1/webhooks/{webhook_id}"): (A, ENV),
    ("POST", "/api/v1/webhooks/{webhook_id}/test"): (A, ENV),
    ("GET", "/api/v1/webhooks/{webhook_id}/deliveries"): (OP, ENV),
    # the web console (lsm.api.console): the same roles, the caller from a cookie or a bearer header
    ("GET", "/login"): (None, PUBLIC),
    ("POST", "/login"): (None, PUBLIC),
    ("POST", "/logout"): (None, PUBLIC),
    ("GET", "/static/{name}"): (None, PUBLIC),
    ("GET", "/environment"): (V, SOME),
    ("GET", "/"): (V, ENV),
    ("GET", "/catalog"): (V, ENV),
    ("GET", "/catalog/{entity}"): (V, ENV),
    ("GET", "/console/events"): (V, ENV),
    ("GET", "/inventory"): (V, ENV),
    ("GET", "/inventory/{entity}"): (V, ENV),
    ("GET", "/inventory/{entity}/new"): (V, ENV),
    ("POST", "/inventory/{entity}"): (OP, ENV),
    ("GET", "/inventory/{entity}/{ref}"): (V, ENV),
    ("POST", "/inventory/{entity}/{ref}/update"): (OP, ENV),
    ("POST", "/inventory/{entity}/{ref}/state"): (OP, ENV),
    ("POST", "/inventory/{entity}/{ref}/expert/state"): (A, ENV),
    ("POST", "/inventory/{entity}/{ref}/expert/attributes"): (A, ENV),
    ("POST", "/inventory/{entity}/{ref}/expert/destroy"): (A, ENV),
    ("POST", "/inventory/{entity}/{ref}/delete"): (OP, ENV),
    # the console's operations pages (lsm.api.console.operations)
    ("GET", "/compiles"): (V, ENV),
    ("GET", "/compiles/{compile_id}"): (V, ENV),
    ("POST", "/compiles/{compile_id}/retry"): (OP, ENV),
    ("GET", "/desired-state"): (V, ENV),
    ("GET", "/desired-state/diff"): (V, ENV),
    ("GET", "/desired-state/{version}"): (V, ENV),
    ("GET", "/desired-state/{version}/diff/{other}"): (V, ENV),
    ("GET", "/resources"): (V, ENV),
    ("GET", "/resources/{resource_id:path}"): (V, ENV),
    ("GET", "/discovered"): (V, ENV),
    ("POST", "/discovered/adopt"): (OP, ENV),
    ("GET", "/compliance"): (V, ENV),
    ("POST", "/compliance"): (OP, ENV),
    ("GET", "/compliance/{report_id}"): (V, ENV),
}

#: the callers and what they hold: role in A, role in B, role over everything
CALLERS: dict[str | None, tuple[Role | None, Role | None, Role | None]] = {
    None: (None, None, None),
    "viewer": (V, None, None),
    "operator": (OP, None, None),
    "env_admin": (A, None, None),
    "other": (None, OP, None),
    "admin": (A, A, A),
}


def api_routes(secured: Secured) -> list[tuple[str, str, list[Access | Public]]]:
    """Every route of the app with its declarations; the same set as its OpenAPI document."""
    # a path convertor (``{resource_id:path}``) is not part of the documented path
    table = [(m, re.sub(r":path}", "}", p), d) for m, p, d in route_table(ROUTERS)]
    documented = {
        (method.upper(), path)
        for path, item in secured.engine.app.openapi()["paths"].items()
        for method in item
    }
    assert {(m, p) for m, p, _ in table} == documented
    return table + route_table(CONSOLE_ROUTERS)  # HTML pages: not in the OpenAPI document


def is_console(path: str) -> bool:
    return any(path == p for _, p, _ in route_table(CONSOLE_ROUTERS))


def expected_status(need: Role | None, scope: str, who: str | None) -> str:
    """``ok``, ``401``, ``403`` or ``404`` for a caller on a route."""
    if scope == PUBLIC:
        return "ok"
    if who is None:
        return "401"
    assert need is not None
    in_a, in_b, everywhere = CALLERS[who]
    if scope == GLOBAL:
        return "ok" if everywhere is not None and everywhere.allows(need) else "403"
    if scope == SOME:
        return "ok" if any(r is not None and r.allows(need) for r in (in_a, in_b)) else "403"
    if in_a is None:
        return "404"  # environment A is not visible: answered as if it did not exist
    return "ok" if in_a.allows(need) else "403"


def test_every_route_is_in_the_table_and_declares_what_the_table_says(secured: Secured) -> None:
    routes = api_routes(secured)
    assert {(m, p) for m, p, _ in routes} == set(EXPECTED), "a route is missing from EXPECTED (or gone)"
    for method, path, declarations in routes:
        need, scope = EXPECTED[(method, path)]
        assert declarations, f"{method} {path} declares no access"
        if scope == PUBLIC:
            assert all(isinstance(d, Public) for d in declarations)
            continue
        accesses = [d for d in declarations if isinstance(d, Access)]
        assert max(a.needed(method).rank for a in accesses) == need.rank, (method, path)  # type: ignore[union-attr]  # every route of a scope needs a role
        assert {a.scope for a in accesses} == {Scope(scope if scope != ENV else "environment")}


def _fill(path: str, secured: Secured) -> str:
    """A concrete URL for one call of a route."""
    note = secured.ids["note"]
    values = {
        "/static/{name}": "/static/console.css",
        "{entity}": "note",
        "{ref}": note,
        "{name}": "simple",
        "{compile_id}": "00000000-0000-0000-0000-000000000000",
        "{version}": "1",
        "{env}": "default",
        "{key}": "recompile_backoff",
        "{token_id}": secured.ids["spare"],
        "{resource_id}": "std::File[h1,path=/etc/motd]",
        "{webhook_id}": "00000000-0000-0000-0000-000000000000",
        "{resource_id:path}": "std::File[h1,path=/etc/motd]",
        "{other}": "1",
        "{report_id}": "00000000-0000-0000-0000-000000000000",
        "{order_id}": "00000000-0000-0000-0000-000000000000",
    }
    for placeholder, value in values.items():
        path = path.replace(placeholder, value)
    return path


BODIES: dict[tuple[str, str], Any] = {
    ("POST", "/lsm/v1/service_inventory/{entity}"): lambda n: {"attributes": {"title": f"t-{n}"}},
    ("POST", "/lsm/v1/service_inventory/{entity}/bulk"): lambda n: {"create": []},
    ("PATCH", "/lsm/v1/service_inventory/{entity}/{ref}"): lambda n: {
        "current_version": 1,
        "attributes": {"text": f"x{n}"},
    },
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/state"): lambda n: {
        "current_version": 1,
        "target_state": "published",
    },
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/expert/state"): lambda n: {
        "current_version": 1,
        "state": "published",
        "reason": "role test",
    },
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/expert/attributes"): lambda n: {
        "current_version": 1,
        "candidate": None,
        "reason": "role test",
    },
    ("POST", "/lsm/v1/service_inventory/{entity}/{ref}/expert/destroy"): lambda n: {
        "current_version": 1,
        "purge_resources": False,
        "reason": "role test",
    },
    ("POST", "/api/v1/compiles"): lambda n: {"kind": "full"},
    # a partial export: refused by rule 7 where no full one came first (a 400 is an answer)
    ("PUT", "/api/v1/desired_state"): lambda n: {"partial": True, "sets": {f"s-{n}": []}},
    ("POST", "/api/v1/environments"): lambda n: {"name": f"new-{n}"},
    ("PUT", "/api/v1/environments/{env}/model"): lambda n: {"model": str(MODEL)},
    ("PUT", "/api/v1/environments/{env}/settings/{key}"): lambda n: {"value": 1.0},
    ("POST", "/api/v1/deploy"): lambda n: {"dry_run": True},
    ("POST", "/api/v1/compliance"): lambda n: {"agents": ["h1"]},
    ("POST", "/lsm/v1/order"): lambda n: {
        "items": [
            {"action": "create", "entity": "note", "attributes": {"title": f"o-{n}"}, "wait_for": "draft"}
        ]
    },
    ("POST", "/lsm/v1/service_inventory/{entity}/adopt"): lambda n: {
        "discovered_ids": ["std::File[h,path=/x]"]
    },
    ("POST", "/api/v1/tokens"): lambda n: {"name": f"made-{n}", "roles": {"default": "viewer"}},
    ("POST", "/api/v1/webhooks"): lambda n: {"url": f"https://receiver.invalid/hook-{n}"},
}
QUERIES: dict[tuple[str, str], dict[str, Any]] = {
    ("DELETE", "/lsm/v1/service_inventory/{entity}/{ref}"): {"current_version": 1},
    ("GET", "/environment"): {"name": "default"},
}


def _console_post(client: httpx.Client, url: str, secured: Secured) -> httpx.Response:
    """A console form post with the CSRF token of the client's session (read from the login page)."""
    page = client.get("/login")
    found = re.search(r'name="csrf_token" value="([0-9a-f]+)"', page.text)
    assert found is not None, page.text
    form = {"csrf_token": found.group(1), "token": secured.tokens["admin"], "next": "/"}
    return client.post(url, data=form)


def _call(client: httpx.Client, method: str, url: str, query: dict[str, Any], body: Any) -> httpx.Response:
    if url in ("/api/v1/events", "/console/events"):  # a stream: its status line is all this test needs
        with client.stream(method, url) as response:
            response.read() if response.status_code != 200 else None
            return response
    return client.request(method, url, params=query, json=body)


def _outcome(response: httpx.Response) -> str:
    if response.status_code == 401:
        return "401"
    if response.status_code == 403:
        return "403"
    if response.status_code == 404 and "unknown environment" in response.text:
        return "404"
    assert response.status_code < 500, response.text
    return "ok"


@pytest.mark.parametrize("who", list(CALLERS), ids=lambda w: w or "no-token")
def test_each_caller_gets_what_its_role_allows_on_every_route(secured: Secured, who: str | None) -> None:
    with secured.client("admin") as admin:
        secured.ids["note"] = admin.post(
            "/lsm/v1/service_inventory/note", json={"attributes": {"title": "n"}}
        ).json()["id"]
    secured.ids["spare"], _ = secured.token("spare", {"default": "viewer"})
    counter = itertools.count()
    wrong = []
    with secured.client(who) as client:
        for method, path, _declared in api_routes(secured):
            need, scope = EXPECTED[(method, path)]
            n = next(counter)
            url = _fill(path, secured)
            body = BODIES.get((method, path), lambda n: None)(n)
            if method == "POST" and is_console(path):
                response = _console_post(client, url, secured)
            else:
                response = _call(client, method, url, QUERIES.get((method, path), {}), body)
            got, want = _outcome(response), expected_status(need, scope, who)
            if got != want:
                wrong.append(f"{method} {path}: {got} ({response.status_code}), expected {want}")
            elif want in ("401", "403", "404") and is_console(path):
                assert response.headers["content-type"].startswith("text/html"), (method, path)
            elif want in ("401", "403", "404"):
                assert response.headers["content-type"].startswith("application/json")
                assert response.json()["error"] in ("unauthenticated", "forbidden", "not_found")
    assert wrong == []
