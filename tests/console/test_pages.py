"""Every console page through the real app in-process (``httpx.ASGITransport``): statuses, key
content, roles, CSRF and bad input. Store-backed: runs on SQLite and, when configured, PostgreSQL.
No compile worker runs here, so instances stay where the requests put them: the model is the API
tests' ``netmodel`` (routers owning ports; notes, whose ``notebook`` lifecycle lets an operator
edit, publish and archive them by hand)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.api.fixtures import LIFECYCLES, MODEL
from tests.conftest import database_at_head

LOCAL = RequestContext.local()
BASE = "http://127.0.0.1"


def _engine(backend: str, tmp_path: Path, *, auth: bool) -> ApiRuntime:
    database = database_at_head(backend, tmp_path)
    config = ServerConfig(
        database_url=database.url,
        model=str(MODEL),
        lifecycle_dirs=[str(LIFECYCLES)],
        embedded_worker=False,
        auth=AuthConfig(enabled=auth),
        state_dir=str(tmp_path / "state"),
    )
    engine = build_api(config, db=database)
    engine.start()
    return engine


def _close(engine: ApiRuntime) -> None:
    engine.stop()
    if not engine.db.is_sqlite:
        engine.db.drop_schema()
    engine.db.dispose()


@pytest.fixture
def engine(backend: str, tmp_path: Path) -> Iterator[ApiRuntime]:
    built = _engine(backend, tmp_path, auth=False)
    try:
        yield built
    finally:
        _close(built)


@pytest.fixture
def secured(backend: str, tmp_path: Path) -> Iterator[ApiRuntime]:
    built = _engine(backend, tmp_path, auth=True)
    try:
        yield built
    finally:
        _close(built)


def run(engine: ApiRuntime, scenario: Callable[[httpx.AsyncClient], Awaitable[Any]]) -> Any:
    """Run ``scenario`` with a client of ``engine.app`` (its own cookie jar, like one browser)."""

    async def main() -> Any:
        transport = httpx.ASGITransport(app=engine.app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            return await scenario(client)

    # a thread of its own: Playwright's sync API keeps an event loop in the main thread
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, main()).result()


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', html)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)


def token(engine: ApiRuntime, role: str) -> str:
    return engine.facades.tokens.create(LOCAL, f"console-{role}", {"default": role}).token


def routers(engine: ApiRuntime, *names: str) -> list[str]:
    """Routers named ``names``; the identity (``mgmt_ip``) of the n-th is ``10.0.0.<n>``."""
    inventory = engine.facades.inventory
    return [
        inventory.create_instance(LOCAL, "router", {"name": n, "mgmt_ip": f"10.0.0.{k}"}).id
        for k, n in enumerate(names, start=1)
    ]


def notes(engine: ApiRuntime, *titles: str) -> list[str]:
    return [engine.facades.inventory.create_instance(LOCAL, "note", {"title": t}).id for t in titles]


# -- pages ----------------------------------------------------------------------------------------


def test_every_page_renders_with_its_key_content(engine: ApiRuntime) -> None:
    (router,) = routers(engine, "edge-1")
    port = engine.facades.inventory.create_instance(LOCAL, "port", {"name": "eth0", "router": router}).id
    (note,) = notes(engine, "first")

    async def scenario(client: httpx.AsyncClient) -> None:
        expected = {
            "/": ["router", "port", "note", "environment"],
            "/catalog": ['href="/catalog/router"', 'href="/catalog/port"'],
            "/catalog/port": ['data-attribute="vlan"', "rw+", "<svg", "Owned by"],
            "/inventory": ['href="/inventory/router"'],
            "/inventory/router": [router, "10.0.0.1", 'data-live-entity="router"'],
            "/inventory/router/new": ['name="attr.name"', 'name="attr.mtu"', "csrf_token"],
            f"/inventory/router/{router}": [
                "edge-1",
                'data-set="candidate"',
                "Event log",
                f'data-owned="{port}"',
            ],
            # the owner by its identity (mgmt_ip), the whole id on hover
            f"/inventory/port/{port}": [
                f'href="/inventory/router/{router}"',
                "Allowed now",
                f'router 10.0.0.1 <code title="{router}">',
            ],
            f"/inventory/note/{note}": ['data-action="update"', 'data-action="state"', "published"],
            "/static/console.js": ["EventSource"],
            "/static/console.css": ["--accent"],
        }
        for path, needles in expected.items():
            response = await client.get(path)
            assert response.status_code == 200, (path, response.text[:300])
            for needle in needles:
                assert needle in response.text, (path, needle)
        nav = (await client.get("/")).text
        for link in ("/catalog", "/inventory", "/compiles", "/desired-state", "/resources", "/discovered"):
            assert f'href="{link}"' in nav

    run(engine, scenario)


def test_the_inventory_filters_by_state_finds_by_identity_and_pages(engine: ApiRuntime) -> None:
    ids = notes(engine, "n1", "n2", "n3", "n4", "n5")
    engine.facades.inventory.set_state(LOCAL, "note", ids[0], current_version=1, target_state="published")

    async def scenario(client: httpx.AsyncClient) -> None:
        drafts = (await client.get("/inventory/note", params={"state": "draft"})).text
        assert ids[0] not in drafts and all(i in drafts for i in ids[1:])
        published = (await client.get("/inventory/note", params={"state": "published"})).text
        assert ids[0] in published and ids[1] not in published
        found = (await client.get("/inventory/note", params={"q": "n3"})).text
        assert ids[2] in found and ids[1] not in found
        by_id = (await client.get("/inventory/note", params={"q": ids[4]})).text
        assert ids[4] in by_id and ids[3] not in by_id
        nothing = (await client.get("/inventory/note", params={"q": "nope"})).text
        assert "No note has the id or a title containing" in nothing
        pages = [
            (await client.get("/inventory/note", params={"limit": 2, "offset": start})).text
            for start in (0, 2, 4)
        ]
        shown = [[i for i in ids if i in page] for page in pages]
        assert sorted(i for page in shown for i in page) == sorted(ids)
        assert [len(page) for page in shown] == [2, 2, 1]
        assert 'rel="next"' in pages[0] and 'rel="next"' not in pages[2] and 'rel="prev"' in pages[2]

    run(engine, scenario)


def test_the_inventory_searches_identity_and_attribute_on_the_server_and_sorts(engine: ApiRuntime) -> None:
    ids = notes(engine, "alpha-1", "zALPHA-2", "beta-1", "gamma")
    for n in (0, 2):
        engine.facades.inventory.update_instance(
            LOCAL, "note", ids[n], current_version=1, attributes={"priority": 7}
        )

    def order(html: str) -> list[str]:
        return [
            i
            for _, i in sorted(
                (html.index(f'data-instance="{i}"'), i) for i in ids if f'data-instance="{i}"' in html
            )
        ]

    async def scenario(client: httpx.AsyncClient) -> None:
        part = (await client.get("/inventory/note", params={"q": "ALPHA", "sort": "-identity"})).text
        assert order(part) == [ids[1], ids[0]]  # a part of the title, any case, sorted descending
        seven = (await client.get("/inventory/note", params={"where": "priority", "equals": "7"})).text
        assert order(seven) == [ids[0], ids[2]]
        both = (
            await client.get("/inventory/note", params={"q": "1", "where": "priority", "equals": "7"})
        ).text
        assert order(both) == [ids[0], ids[2]]
        none = (
            await client.get("/inventory/note", params={"q": "alpha", "where": "priority", "equals": "0"})
        ).text
        assert order(none) == [ids[1]]
        for params, field in (
            ({"where": "colour", "equals": "red"}, "colour"),
            ({"where": "priority", "equals": "high"}, "priority"),
            ({"sort": "colour"}, "sort"),
        ):
            refused = await client.get("/inventory/note", params=params)
            assert refused.status_code == 422 and field in refused.text, refused.text[:300]

    run(engine, scenario)


@pytest.mark.parametrize(
    ("path", "params", "status", "needle"),
    [
        ("/inventory/note", {"limit": "lots"}, 422, "limit must be a whole number"),
        ("/inventory/note", {"limit": "0"}, 422, "limit must be 1..500"),
        ("/inventory/note", {"offset": "-1"}, 422, "offset must be"),
        ("/inventory/note", {"state": "sideways"}, 422, "sideways"),
        ("/inventory/nothing", {}, 404, "nothing"),
        ("/catalog/nothing", {}, 404, "nothing"),
        ("/inventory/note/00000000-0000-0000-0000-000000000000", {}, 404, "00000000"),
        ("/static/secrets.txt", {}, 404, "not found"),
    ],
)
def test_bad_page_input_is_a_typed_error_page_naming_it(
    engine: ApiRuntime, path: str, params: dict[str, str], status: int, needle: str
) -> None:
    async def scenario(client: httpx.AsyncClient) -> httpx.Response:
        return await client.get(path, params=params)

    response = run(engine, scenario)
    assert response.status_code == status
    assert needle in response.text


# -- actions ----------------------------------------------------------------------------------------


def test_an_order_needs_the_csrf_token_of_the_session_and_creates_nothing_without_it(
    engine: ApiRuntime,
) -> None:
    async def scenario(client: httpx.AsyncClient) -> None:
        good = csrf_of((await client.get("/inventory/note/new")).text)
        refused = await client.post("/inventory/note", data={"attr.title": "x1"})
        assert refused.status_code == 403 and "CSRF" in refused.text
        forged = await client.post("/inventory/note", data={"attr.title": "x2", "csrf_token": "0" * 64})
        assert forged.status_code == 403
        # a cross-site form: the browser sends no cookie (SameSite=Strict), whatever the token
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=engine.app), base_url=BASE) as other:
            cross = await other.post("/inventory/note", data={"attr.title": "x3", "csrf_token": good})
            assert cross.status_code == 403
        assert engine.facades.inventory.list_instances(LOCAL, "note") == []
        made = await client.post(
            "/inventory/note", data={"attr.title": "x4", "attr.priority": "2", "csrf_token": good}
        )
        assert made.status_code == 303
        (instance,) = engine.facades.inventory.list_instances(LOCAL, "note")
        assert made.headers["location"] == f"/inventory/note/{instance.id}"
        assert instance.candidate_attributes == {"title": "x4", "text": "", "priority": 2}

    run(engine, scenario)


def test_a_refused_order_shows_the_form_again_with_the_error_naming_the_attribute(engine: ApiRuntime) -> None:
    notes(engine, "taken")

    async def scenario(client: httpx.AsyncClient) -> None:
        csrf = csrf_of((await client.get("/inventory/note/new")).text)
        bad_json = await client.post(
            "/inventory/note", data={"attr.title": "t", "attr.priority": "high", "csrf_token": csrf}
        )
        assert bad_json.status_code == 422
        assert 'data-field-error="priority"' in bad_json.text and 'value="high"' in bad_json.text
        wrong_type = await client.post(
            "/inventory/note", data={"attr.title": "t", "attr.priority": '"high"', "csrf_token": csrf}
        )
        assert wrong_type.status_code == 422 and 'data-field-error="priority"' in wrong_type.text
        missing = await client.post("/inventory/note", data={"attr.priority": "1", "csrf_token": csrf})
        assert missing.status_code == 422 and 'data-field-error="title"' in missing.text
        unknown = await client.post("/inventory/note", data={"attr.colour": "red", "csrf_token": csrf})
        assert unknown.status_code == 422 and "colour: not an attribute of this entity" in unknown.text
        taken = await client.post("/inventory/note", data={"attr.title": "taken", "csrf_token": csrf})
        assert taken.status_code == 409 and "identity_conflict" in taken.text
        not_form = await client.post(
            "/inventory/note", json={"attr.title": "j"}, headers={"X-CSRF-Token": csrf}
        )
        assert not_form.status_code == 422 and "form posts only" in not_form.text
        assert len(engine.facades.inventory.list_instances(LOCAL, "note")) == 1

    run(engine, scenario)


def test_update_and_set_state_send_current_version_and_a_stale_one_is_explained(engine: ApiRuntime) -> None:
    (note,) = notes(engine, "story")
    inventory = engine.facades.inventory

    async def scenario(client: httpx.AsyncClient) -> None:
        page = (await client.get(f"/inventory/note/{note}")).text
        csrf = csrf_of(page)
        assert 'name="current_version" value="1"' in page
        seen = '{"priority": 0, "text": "", "title": "story"}'
        form = {"csrf_token": csrf, "current_version": "1", "seen": seen, "attr.title": "story"}
        updated = await client.post(f"/inventory/note/{note}/update", data={**form, "attr.text": "hi"})
        assert updated.status_code == 303
        assert (inventory.get_instance(LOCAL, "note", note).candidate_attributes or {})["text"] == "hi"
        # another client moves it on; the page still holds version 1
        inventory.update_instance(LOCAL, "note", note, current_version=2, attributes={"text": "theirs"})
        stale = await client.post(f"/inventory/note/{note}/update", data={**form, "attr.text": "mine"})
        assert stale.status_code == 409
        assert "you had <strong data-conflict-had>1</strong>" in stale.text
        assert "now version <strong data-conflict-now>3</strong>" in stale.text
        assert 'data-conflict-changed="text"' in stale.text and "theirs" in stale.text
        assert 'value="mine"' in stale.text  # what the user typed is still in the form
        assert (inventory.get_instance(LOCAL, "note", note).candidate_attributes or {})["text"] == "theirs"
        same = {**form, "current_version": "3", "seen": seen.replace('""', '"theirs"'), "attr.text": "theirs"}
        nothing = await client.post(f"/inventory/note/{note}/update", data=same)
        assert nothing.status_code == 422 and "nothing to update" in nothing.text
        no_version = await client.post(f"/inventory/note/{note}/state", data={"csrf_token": csrf})
        assert no_version.status_code == 422 and "current_version" in no_version.text
        state = {"csrf_token": csrf, "current_version": "3"}
        wrong = await client.post(f"/inventory/note/{note}/state", data={**state, "target_state": "archived"})
        assert wrong.status_code == 409 and "transfer_not_allowed" in wrong.text
        published = await client.post(
            f"/inventory/note/{note}/state", data={**state, "target_state": "published"}
        )
        assert published.status_code == 303
        assert inventory.get_instance(LOCAL, "note", note).state == "published"

    run(engine, scenario)


def test_delete_fires_on_delete_with_the_current_version(engine: ApiRuntime) -> None:
    (note,) = notes(engine, "old")

    async def scenario(client: httpx.AsyncClient) -> None:
        page = (await client.get(f"/inventory/note/{note}")).text
        assert 'data-action="delete"' in page
        gone = await client.post(
            f"/inventory/note/{note}/delete", data={"csrf_token": csrf_of(page), "current_version": "1"}
        )
        assert gone.status_code == 303

    run(engine, scenario)
    assert engine.facades.inventory.get_instance(LOCAL, "note", note).state == "archived"


# -- authentication ---------------------------------------------------------------------------------


def test_login_sets_a_strict_httponly_cookie_and_logout_clears_it(secured: ApiRuntime) -> None:
    viewer = token(secured, "viewer")

    async def scenario(client: httpx.AsyncClient) -> None:
        anonymous = await client.get("/catalog")
        assert anonymous.status_code == 401 and 'action="/login"' in anonymous.text
        assert 'name="next" value="/catalog"' in anonymous.text
        csrf = csrf_of(anonymous.text)
        wrong = await client.post(
            "/login", data={"csrf_token": csrf, "token": "lsm_nope", "next": "/catalog"}
        )
        assert wrong.status_code == 401 and "unknown, expired or revoked" in wrong.text
        no_csrf = await client.post("/login", data={"token": viewer, "next": "/catalog"})
        assert no_csrf.status_code == 403
        elsewhere = await client.post(
            "/login", data={"csrf_token": csrf, "token": viewer, "next": "//evil.test/"}
        )
        assert elsewhere.status_code == 303 and elsewhere.headers["location"] == "/"
        cookie = elsewhere.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert (await client.get("/catalog")).status_code == 200
        page = (await client.get("/catalog")).text
        out = await client.post("/logout", data={"csrf_token": csrf_of(page)})
        assert out.status_code == 303
        assert (await client.get("/catalog")).status_code == 401

    run(secured, scenario)


def test_the_console_event_stream_takes_the_session_cookie(secured: ApiRuntime) -> None:
    """Served on a socket: an event stream never ends, and ASGITransport reads whole bodies."""
    viewer = token(secured, "viewer")
    with served_url(secured) as url, httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("GET", "/console/events") as anonymous:
            assert anonymous.status_code == 401
        csrf = csrf_of(client.get("/login").text)
        assert client.post("/login", data={"csrf_token": csrf, "token": viewer}).status_code == 303
        with client.stream("GET", "/console/events") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert next(stream.iter_lines()) == ": connected"


def test_a_viewer_sees_no_action_and_is_refused_one_an_operator_acts(secured: ApiRuntime) -> None:
    (note,) = notes(secured, "edge")
    tokens = {role: token(secured, role) for role in ("viewer", "operator")}

    def as_role(role: str) -> Callable[[httpx.AsyncClient], Awaitable[tuple[str, int, int]]]:
        async def scenario(client: httpx.AsyncClient) -> tuple[str, int, int]:
            csrf = csrf_of((await client.get("/login")).text)
            await client.post("/login", data={"csrf_token": csrf, "token": tokens[role]})
            page = (await client.get(f"/inventory/note/{note}")).text
            order = await client.get("/inventory/note/new")
            made = await client.post(
                "/inventory/note", data={"csrf_token": csrf_of(page), "attr.title": role}
            )
            return page, order.status_code, made.status_code

        return scenario

    viewer_page, viewer_form, viewer_post = run(secured, as_role("viewer"))
    assert "data-action=" not in viewer_page and "Order one" not in viewer_page
    assert viewer_post == 403 and viewer_form == 200
    operator_page, _, operator_post = run(secured, as_role("operator"))
    assert 'data-action="update"' in operator_page
    assert operator_post == 303
    names = {
        (i.candidate_attributes or {})["title"]
        for i in secured.facades.inventory.list_instances(LOCAL, "note")
    }
    assert names == {"edge", "operator"}


def test_the_environment_switcher_remembers_a_visible_environment_and_forgets_a_gone_one(
    engine: ApiRuntime,
) -> None:
    engine.facades.environments.create_environment(LOCAL, "other", str(MODEL))
    notes(engine, "in-default")

    async def scenario(client: httpx.AsyncClient) -> None:
        switched = await client.get("/environment", params={"name": "other", "next": "/inventory/note"})
        assert switched.status_code == 303 and switched.headers["location"] == "/inventory/note"
        other = (await client.get("/inventory/note")).text
        assert '<option value="other" selected>' in other and "in-default" not in other
        client.cookies.set("lsm_env", "gone")
        back = await client.get("/inventory/note")
        assert back.status_code == 200 and "in-default" in back.text
        named = await client.get("/inventory/note", params={"env": "gone"})
        assert named.status_code == 404 and "unknown environment" in named.text

    run(engine, scenario)
