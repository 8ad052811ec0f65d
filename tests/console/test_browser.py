"""The console in a real headless Chromium against a real ``lsm server``-equivalent engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.console.conftest import ConsoleServer


def test_the_catalog_shows_each_entity_and_draws_its_lifecycle(
    console_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page = browser_page
    page.goto(f"{console_server.url}/catalog")
    expect(page.get_by_role("link", name="router", exact=True)).to_be_visible()
    shoot(page, "catalog")
    page.get_by_role("link", name="router", exact=True).click()
    expect(page.locator("h1")).to_contain_text("router")
    expect(page.locator("svg.lifecycle g.state").first).to_be_visible()
    expect(page.locator("tr[data-attribute='name']")).to_be_visible()
    shoot(page, "entity")
