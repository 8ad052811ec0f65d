"""Fixtures of the console tests: a real served engine and a real headless Chromium.

``console_server`` is what ``lsm server`` runs -- the API with the console, the compile worker
and the deploy agent in one process -- over a temporary SQLite file, served by uvicorn on
127.0.0.1 (a free port). The model is ``tests.deploy.file_model`` (routers and ports whose file
resources the agent writes under the test's directory), so an order really reaches ``up``.
``secured_console_server`` is the same with authentication on and tokens of each role.

``browser_page`` is a page of Debian's Chromium (``/usr/bin/chromium``) driven by Playwright,
in a fresh profile per test; tests skip with the reason when Chromium is not installed (``.ci/run``
installs it). ``shoot(page, name)`` keeps a screenshot in the artifacts directory
(``$LSM_TEST_ARTIFACTS`` or ``.artifacts/console/``, git-ignored).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pytest

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.schemas.auth import AuthConfig
from lsm.testing import served_url
from tests.template_db import sqlite_at_head

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MODEL = "tests.deploy.file_model"
ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass
class ConsoleServer:
    """A served engine: ``url`` for the browser, ``engine`` for in-process checks, ``tokens`` by role."""

    engine: ApiRuntime
    url: str
    state_dir: Path
    tokens: dict[str, str] = field(default_factory=dict)

    def http(self, who: str | None = None, **options: Any) -> httpx.Client:
        """A plain HTTP client on the server (``who``: the role whose token it sends as bearer)."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"} if who else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **options)


def build_console_engine(tmp_path: Path, *, auth: bool) -> ApiRuntime:
    state_dir = tmp_path / "state"
    config = ServerConfig(
        database_url=sqlite_at_head(tmp_path / "lsm.db"),
        model=MODEL,
        embedded_worker=True,
        embedded_agent=True,
        state_dir=str(state_dir),
        auth=AuthConfig(enabled=auth),
    )
    engine = build_api(config)
    engine.start()
    return engine


@pytest.fixture
def console_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    """``lsm server`` with authentication off (the loopback default)."""
    engine = build_console_engine(tmp_path, auth=False)
    try:
        with served_url(engine) as url:
            yield ConsoleServer(engine, url, tmp_path / "state")
    finally:
        engine.stop()
        engine.db.dispose()


@pytest.fixture
def secured_console_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    """``lsm server`` with authentication on and a token per role of the default environment."""
    engine = build_console_engine(tmp_path, auth=True)
    try:
        with served_url(engine) as url:
            server = ConsoleServer(engine, url, tmp_path / "state")
            for role in ("viewer", "operator", "admin"):
                created = engine.facades.tokens.create(RequestContext.local(), role, {"default": role})
                server.tokens[role] = created.token
            yield server
    finally:
        engine.stop()
        engine.db.dispose()


T = TypeVar("T")


def wait_for(read: Callable[[], T], done: Callable[[T], bool], *, seconds: float = 60.0) -> T:
    """``read()`` until ``done`` holds for its answer; fails naming the last answer at the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"still not there after {seconds} s: {value!r}"
        time.sleep(0.05)


def artifacts_dir() -> Path:
    found = os.environ.get("LSM_TEST_ARTIFACTS")
    path = Path(found) / "console" if found else ROOT / ".artifacts" / "console"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def shoot(request: pytest.FixtureRequest) -> Callable[[Page, str], Path]:
    """``shoot(page, name)``: a full-page screenshot ``<test>--<name>.png`` in the artifacts dir."""
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)

    def take(page: Page, name: str) -> Path:
        path = artifacts_dir() / f"{test}--{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """One headless Chromium per test module (each test gets its own context: a fresh profile).

    Not per session: Playwright's sync API runs an event loop in the main thread while it is
    started, and tests of other modules call ``asyncio.run`` there."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: install Debian's chromium package to run the browser tests")
    if shutil.which("chromium") is None and not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not executable")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser_page(chromium: Browser) -> Iterator[Page]:
    """A page in a fresh browser context (no cookies, no storage); default timeout 30 s."""
    context = chromium.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
