"""The operations pages in a real headless Chromium: compiles (live), desired state and its
difference, resources, discovered with an adoption; every page screenshotted."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from lsm.client import Client
from lsm.discovery import record_discovery
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.testing import served_url
from tests.console.conftest import ConsoleServer, wait_for
from tests.console.ops_fixtures import EXAMPLE
from tests.discovery import plant_files, run_file_discovery


def routers_up(client: Client, *names: str) -> list[dict[str, Any]]:
    for name in names:
        client.create_instance("router", {"name": name})
    return wait_for(
        lambda: client.list_instances("router"),
        lambda found: len(found) == len(names) and all(i["state"] == "up" for i in found),
    )


def test_compiles_desired_state_and_resources_in_the_browser(
    console_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page, url = browser_page, console_server.url
    with Client(url) as client:
        first = routers_up(client, "edge-1", "edge-2")[0]
        before_update = client.desired_states()[0]["version"]
        client.update_instance(
            "router", first["id"], current_version=first["version"], attributes={"motd": "bye"}
        )
        wait_for(
            lambda: client.get_instance("router", first["id"]),
            lambda i: i["state"] == "up" and i["version"] > first["version"] + 1,
        )

        # the compile list follows new compiles without a reload
        page.goto(f"{url}/compiles")
        expect(page.locator("[data-live-status]")).to_have_text("live")
        rows = page.locator("tr[data-compile]")
        before = rows.count()
        assert before >= 2
        marker = page.evaluate("window.__marker = Math.random()")
        client.request_compile(kind="full", wait=True)
        expect(rows).to_have_count(before + 1, timeout=60_000)
        assert page.evaluate("window.__marker") == marker, "the page was reloaded"
        shoot(page, "compiles")
        versions = client.desired_states()

    page.select_option("select[name=status]", "success")
    page.get_by_role("button", name="filter").click()
    page.wait_for_url("**/compiles?*status=success*")
    expect(page.locator("tr[data-compile] .status-failed")).to_have_count(0)
    page.locator("tr[data-compile] a").first.click()
    page.wait_for_url("**/compiles/*")
    expect(page.locator("table.timings tr[data-stage=total]")).to_be_visible()
    shoot(page, "compile-report")

    # just before and after the update: one router's file changed its content
    newest, oldest = versions[0]["version"], before_update
    page.goto(f"{url}/desired-state")
    expect(page.locator("tr[data-version]")).to_have_count(len(versions))
    shoot(page, "desired-state")
    page.fill("input[name=a]", str(oldest))
    page.fill("input[name=b]", str(newest))
    page.get_by_role("button", name="compare").click()
    page.wait_for_url(f"**/desired-state/{oldest}/diff/{newest}")
    expect(page.locator("section.diff-resource[data-change=changed] tr.changed").first).to_be_visible()
    shoot(page, "desired-state-diff")
    page.goto(f"{url}/desired-state/{newest}")
    expect(page.locator("tr[data-set]").first).to_be_visible()
    shoot(page, "desired-state-version")

    page.goto(f"{url}/resources")
    expect(page.locator("tr[data-resource] .status-deployed").first).to_be_visible()
    shoot(page, "resources")
    page.locator("tr[data-resource] a").first.click()
    expect(page.locator("table.actions-log tr[data-action]").first).to_be_visible()
    shoot(page, "resource")


@pytest.fixture
def discovery_server(tmp_path: Path) -> Iterator[str]:
    """``examples/discovery`` served with authentication off, two files discovered."""
    config = ServerConfig(
        database_url=f"sqlite:///{tmp_path / 'lsm.db'}",
        model=str(EXAMPLE),
        lifecycle_dirs=[str(EXAMPLE)],
        embedded_worker=False,
        settings={"partial_compiles": False},
    )
    engine = build_api(config)
    engine.start()
    try:
        plant_files(tmp_path / "srv", {"motd": "hello\n", "issue": "Welcome\n"}, agent="host1")
        discovery_id, found = run_file_discovery(tmp_path / "srv", agent="host1")
        with engine.db.write() as session:
            record_discovery(
                session, engine.context(None).env_id, discovery_id, "host1", found, now=datetime.now(UTC)
            )
        with served_url(engine) as url:
            yield url
    finally:
        engine.stop()
        engine.db.dispose()


def test_adopting_a_discovered_resource_from_the_page(
    discovery_server: str, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page = browser_page
    page.goto(f"{discovery_server}/discovered")
    rows = page.locator("tr[data-discovered]")
    expect(rows).to_have_count(2)
    shoot(page, "discovered")
    target = rows.first.get_attribute("data-discovered")
    rows.first.get_by_role("button", name="adopt").click()
    page.wait_for_url("**/inventory/managed_file/*")
    instance_id = page.url.rsplit("/", 1)[1]
    shoot(page, "adopted-instance")
    page.goto(f"{discovery_server}/discovered")
    adopted = page.locator(f'tr[data-discovered="{target}"]')
    expect(adopted).to_contain_text("adopted as")
    expect(adopted.locator(f'a[href="/inventory/managed_file/{instance_id}"]')).to_be_visible()
    expect(adopted.get_by_role("button", name="adopt")).to_have_count(0)
    shoot(page, "discovered-after-adoption")
