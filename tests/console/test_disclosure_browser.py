"""A viewer's console shows what the API shows that viewer, nothing more (docs/api.md §2).

The server runs ``tests.models.fragile`` with authentication on: one widget compiles, one
explodes in its implementation (a failed compile with a traceback and the model's path in its
report, and an error line in the instance's event log). Logged in as a viewer in headless
Chromium, the test walks every console page reachable by a link from the overview (and asks
each compile for its details with ``?details=1``, as an admin may), and fails on any page that
names a directory of this server or carries a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

import lsm
import tests.models.fragile as fragile
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.console.conftest import ROOT, ConsoleServer, wait_for

#: pages the walk does not open: actions, the event stream, static files
SKIPPED = ("/logout", "/console/events", "/static/", "/environment")
#: at most this many pages are opened (every page kind is reached long before)
MOST_PAGES = 80


@pytest.fixture
def fragile_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    """``lsm server`` on the fragile model, authentication on, compiles run by its own worker."""
    config = ServerConfig(
        database_url=f"sqlite:///{tmp_path / 'lsm.db'}",
        model="tests.models.fragile",
        embedded_worker=True,
        state_dir=str(tmp_path / "state"),
        auth=AuthConfig(enabled=True),
    )
    engine = build_api(config)
    engine.start()
    try:
        with served_url(engine) as url:
            server = ConsoleServer(engine, url, tmp_path / "state")
            for role in ("viewer", "operator"):
                created = engine.facades.tokens.create(RequestContext.local(), role, {"default": role})
                server.tokens[role] = created.token
            yield server
    finally:
        engine.stop()
        engine.db.dispose()


def server_paths(tmp_path: Path) -> list[str]:
    """Directories of this server a page must not name: the checkout, the package, the model,
    the interpreter's prefix and the test's state."""
    found = {ROOT, Path(lsm.__file__).parent, Path(fragile.__file__).parent, Path(sys.prefix), tmp_path}
    return sorted({str(p.resolve()) for p in found} | {str(p) for p in found})


def leaks(text: str, paths: list[str]) -> list[str]:
    """What in ``text`` tells the server's layout: a traceback, a frame line, a server path."""
    found = [p for p in paths if p in text]
    found += [
        mark for mark in ("Traceback (most recent call last)", 'File "/', "File &#34;/") if mark in text
    ]
    return found


def test_a_viewer_s_pages_name_no_server_path_and_carry_no_traceback(
    fragile_server: ConsoleServer,
    browser_page: Page,
    shoot: Callable[[Page, str], Path],
    tmp_path: Path,
) -> None:
    server = fragile_server
    with server.http("operator") as api:
        made = {}
        for name, explode in (("w-ok", False), ("w-boom", True)):
            answer = api.post(
                "/lsm/v1/service_inventory/widget", json={"attributes": {"name": name, "explode": explode}}
            )
            assert answer.status_code == 200, answer.text
            made[name] = answer.json()
        boom = made["w-boom"]
        wait_for(
            lambda: api.get(f"/lsm/v1/service_inventory/widget/{boom['id']}/log").json(),
            lambda log: any(e["is_error"] for e in log),
        )
        wait_for(
            lambda: api.get("/api/v1/compiles", params={"status": "failed"}).json(),
            lambda failed: len(failed) > 0,
        )
    # the server really has something to hide: the stored report has the traceback
    stored = server.engine.facades.compiles.list_compiles(RequestContext.local(), limit=50)
    assert any("traceback" in str(c.report) for c in stored), "no failed compile with a traceback to hide"

    page = browser_page
    page.goto(f"{server.url}/")
    page.get_by_label("Token").fill(server.tokens["viewer"])
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".actor")).to_contain_text("token:viewer#")

    paths = server_paths(tmp_path)
    to_open = ["/", f"/inventory/widget/{boom['id']}"]
    to_open += [f"/compiles/{c.id}?details=1" for c in stored if c.status == "failed"]
    opened: set[str] = set()
    kinds: set[str] = set()
    while to_open and len(opened) < MOST_PAGES:
        target = to_open.pop(0)
        if target in opened:
            continue
        opened.add(target)
        shown = page.goto(f"{server.url}{target}")
        assert shown is not None and shown.status < 500, (target, shown and shown.status)
        text = page.content()
        assert not leaks(text, paths), f"{target} shows {leaks(text, paths)}"
        kinds.add(urlsplit(target).path.split("/")[1])
        for href in page.eval_on_selector_all(
            "a[href^='/']", "links => links.map(a => a.getAttribute('href'))"
        ):
            if href not in opened and not href.startswith(SKIPPED):
                to_open.append(href)
    assert {"", "catalog", "inventory", "compiles", "desired-state", "resources"} <= kinds, kinds
    page.goto(f"{server.url}/inventory/widget/{boom['id']}")
    expect(page.locator(".timeline, [data-event]").first).to_be_visible()
    shoot(page, "failed-instance-as-viewer")
    failed = next(c for c in stored if c.status == "failed")
    page.goto(f"{server.url}/compiles/{failed.id}?details=1")
    expect(page.get_by_role("alert")).to_contain_text("widget w-boom exploded")
    expect(page.locator("pre.traceback")).to_have_count(0)
    shoot(page, "failed-compile-as-viewer")
