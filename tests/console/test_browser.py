"""The console in a real headless Chromium against a real ``lsm server``-equivalent engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.console.conftest import ConsoleServer, wait_for


def test_the_catalog_shows_each_entity_and_draws_its_lifecycle(
    console_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page = browser_page
    page.goto(f"{console_server.url}/")
    expect(page.get_by_role("heading", name="Environment default")).to_be_visible()
    shoot(page, "overview")
    page.get_by_role("link", name="Catalog", exact=True).click()
    expect(page.get_by_role("link", name="router", exact=True)).to_be_visible()
    shoot(page, "catalog")
    page.get_by_role("link", name="router", exact=True).click()
    expect(page.locator("h1")).to_contain_text("router")
    expect(page.locator("svg.lsm-graph g[data-id=up]")).to_be_visible()
    expect(page.locator("svg.lsm-graph g.edge").first).to_be_visible()
    expect(page.locator("tr[data-attribute='name']")).to_be_visible()
    shoot(page, "entity")


def test_an_order_from_the_console_reaches_up_live_then_updates_and_a_409_is_explained(
    console_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page = browser_page
    page.goto(f"{console_server.url}/inventory/router/new")
    shoot(page, "order-form")
    page.fill("#attr-name", "edge-1")
    page.fill("#attr-motd", "hello from the console")
    page.get_by_role("button", name="Order").click()
    page.wait_for_url("**/inventory/router/*")
    expect(page.locator("[data-live-status]")).to_have_text("live")
    instance_id = page.url.rsplit("/", 1)[1]
    # the worker compiles and the agent deploys: the page follows without being reloaded
    marker = page.evaluate("window.__marker = Math.random()")
    expect(page.locator("[data-instance-state]")).to_have_text("up", timeout=60_000)
    assert page.evaluate("window.__marker") == marker, "the page was reloaded"
    expect(page.locator("[data-resource]").first).to_have_attribute("data-status", "deployed")
    shoot(page, "instance-up")

    # update from the console: the new value lands in the candidate set
    page.fill("#attr-motd", "second motd")
    page.locator("form[data-action=update] button").click()
    page.wait_for_url(f"**/inventory/router/{instance_id}")
    # the update walks the lifecycle back to up, where the new value is the active one
    expect(page.locator("section[data-set=active] dd").filter(has_text="second motd")).to_be_visible(
        timeout=60_000
    )
    expect(page.locator("[data-instance-state]")).to_have_text("up", timeout=60_000)
    shoot(page, "instance-updated")

    # another client (the Python client) updates while this user is editing
    page.fill("#attr-motd", "mine")
    from lsm.client import Client

    with Client(console_server.url) as other:
        current = other.get_instance("router", instance_id)
        other.update_instance(
            "router", instance_id, current_version=current["version"], attributes={"motd": "theirs"}
        )
        settled = wait_for(lambda: other.get_instance("router", instance_id), lambda i: i["state"] == "up")
    expect(page.locator("[data-instance-version]")).to_have_text(str(settled["version"]), timeout=30_000)
    expect(page.locator("#attr-motd")).to_have_value("mine")  # the form being edited is kept
    page.locator("form[data-action=update] button").click()
    conflict = page.locator("[data-conflict]")
    expect(conflict).to_be_visible()
    expect(conflict.locator("[data-conflict-actor]")).to_have_text("local")
    expect(conflict.locator("[data-conflict-changed=motd]")).to_contain_text("theirs")
    shoot(page, "instance-409")


def test_the_inventory_list_shows_a_new_instance_live_and_filters_by_state(
    console_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page = browser_page
    page.goto(f"{console_server.url}/inventory/router")
    expect(page.locator("[data-live-status]")).to_have_text("live")
    marker = page.evaluate("window.__marker = Math.random()")
    from lsm.client import Client

    with Client(console_server.url) as other:
        made = other.create_instance("router", {"name": "edge-live"})
    row = page.locator(f"tr[data-instance='{made['id']}']")
    expect(row).to_be_visible(timeout=30_000)
    expect(row).to_have_attribute("data-state", "up", timeout=60_000)
    assert page.evaluate("window.__marker") == marker, "the page was reloaded"
    shoot(page, "inventory")
    page.get_by_label("terminated").check()
    page.get_by_role("button", name="Show").click()
    expect(page.locator("tr[data-instance]")).to_have_count(0)
    page.goto(f"{console_server.url}/inventory/router?q=edge-live")
    expect(page.locator("tr[data-instance]")).to_have_count(1)


def test_login_as_viewer_shows_no_action_operator_acts_and_logout_ends_the_session(
    secured_console_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    server = secured_console_server
    page = browser_page
    with server.http("operator") as api:
        made = api.post("/lsm/v1/service_inventory/router", json={"attributes": {"name": "edge-a"}}).json()
    page.goto(f"{server.url}/inventory/router/{made['id']}")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    shoot(page, "login")
    page.get_by_label("Token").fill("lsm_not-a-token")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("unknown, expired or revoked")
    page.get_by_label("Token").fill(server.tokens["viewer"])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"**/inventory/router/{made['id']}")
    expect(page.locator(".actor")).to_contain_text("token:viewer#")
    expect(page.locator("[data-instance-state]")).to_have_text("up", timeout=60_000)
    expect(page.locator("form[data-action]")).to_have_count(0)
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["lsm_session"]["httpOnly"] and cookies["lsm_session"]["sameSite"] == "Strict"
    assert page.evaluate("document.cookie").find("lsm_session") < 0  # no script can read it
    shoot(page, "instance-as-viewer")
    page.get_by_role("button", name="log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.goto(f"{server.url}/catalog")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.get_by_label("Token").fill(server.tokens["operator"])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/catalog")
    page.goto(f"{server.url}/inventory/router/{made['id']}")
    expect(page.locator("form[data-action=update]")).to_be_visible()
    shoot(page, "instance-as-operator")
