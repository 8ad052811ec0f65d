"""Engines with something to show on the operations pages, on each backend (the ``db`` fixture).

* ``deployed_engine``: the file model with worker and agent; two routers ordered and ``up``,
  one updated (so there are several compiles, versions and deployed resources);
* ``discovery_engine``: ``examples/discovery`` with three discovered files recorded from a real
  run of the bundled file discovery.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.discovery import record_discovery
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.schemas.auth import AuthConfig
from lsm.store.database import Database
from tests.discovery import plant_files, run_file_discovery

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discovery"
ROUTERS = "/lsm/v1/service_inventory/router"


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll ``check`` until it answers something true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Pages:
    """A browser-like client of the real app through ``httpx.ASGITransport`` (no socket): it
    keeps cookies between calls, as a browser does (the CSRF token is bound to one)."""

    def __init__(self, engine: ApiRuntime, token: str | None = None) -> None:
        """``token``: log in with it through the login form, as a browser (a session cookie)."""
        self.app = engine.app
        self.cookies = httpx.Cookies()
        self.token = token
        if token is not None:
            form = self.get("/login")
            answer = self.post("/login", data={"csrf_token": self.csrf(form), "token": token, "next": "/"})
            assert answer.status_code == 303, answer.text

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1", cookies=self.cookies
            ) as client:
                answer = await client.request(method, url, **options)
                self.cookies = client.cookies
                return answer

        # in a thread of its own: the browser tests' Playwright keeps an event loop running in
        # this one, and asyncio.run refuses to start a second loop there
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(lambda: asyncio.run(send())).result()

    def get(self, url: str, **options: Any) -> httpx.Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> httpx.Response:
        return self.request("POST", url, **options)

    def api(self, url: str, **options: Any) -> Any:
        """A GET of the JSON API with the same caller (as a bearer token; the API takes no cookie)."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        answer = self.request("GET", url, headers=headers, **options)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def csrf(self, page: httpx.Response) -> str:
        found = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert found is not None, "the page has no form with a CSRF token"
        return found.group(1)


@pytest.fixture
def deployed_engine(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> ApiRuntime:
    engine = engine_factory(
        "tests.deploy.file_model",
        embedded_worker=True,
        embedded_agent=True,
        config={"state_dir": str(tmp_path / "state")},
    )
    return engine


@pytest.fixture(params=[False, True], ids=["auth-off", "auth-on"])
def discovery_engine(db: Database, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ApiRuntime]:
    """With ``auth-on``, ``engine.tokens`` holds a token per role of the default environment."""
    config = ServerConfig(
        database_url=db.url,
        model=str(EXAMPLE),
        lifecycle_dirs=[str(EXAMPLE)],
        embedded_worker=False,
        settings={"partial_compiles": False},
        auth=AuthConfig(enabled=request.param),
    )
    engine = build_api(config, db=db)
    engine.start()
    try:
        plant_files(tmp_path / "srv", {"motd": "hello\n", "issue": "Welcome\n"}, agent="host1")
        discovery_id, found = run_file_discovery(tmp_path / "srv", agent="host1")
        tokens = {}
        if request.param:
            for role in ("viewer", "operator"):
                created = engine.facades.tokens.create(RequestContext.local(), role, {"default": role})
                tokens[role] = created.token
        engine.tokens = tokens  # type: ignore[attr-defined]  # the tokens kept on the engine for the tests
        with db.write() as session:
            record_discovery(
                session, engine.context(None).env_id, discovery_id, "host1", found, now=datetime.now(UTC)
            )
        yield engine
    finally:
        engine.stop()
