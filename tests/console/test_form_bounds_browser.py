"""Inline validation of the console's forms from the entity's JSON schema, in headless Chromium:
each bound (minimum/maximum, exclusive ones, minLength/maxLength, pattern, enum, required) says
what is wrong under its field as it is typed and keeps the form from being posted; a form that
passes is posted and the server orders the instance. ``lsm.api.console.bounds`` reads the rules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from lsm.api.console.bounds import field_rules
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.testing import served_url
from tests.console.conftest import ConsoleServer

MODEL = str(Path(__file__).with_name("bounded_model.py"))


@pytest.fixture
def bounded_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    config = ServerConfig(database_url=f"sqlite:///{tmp_path / 'lsm.db'}", model=MODEL)
    engine = build_api(config)
    engine.start()
    try:
        with served_url(engine) as url:
            yield ConsoleServer(engine, url, tmp_path / "state")
    finally:
        engine.stop()
        engine.db.dispose()


def test_the_rules_come_from_the_json_schema() -> None:
    from tests.console.bounded_model import link

    schema = link.entity.model_json_schema()
    rules = field_rules(schema)
    assert rules["name"] == {
        "min-length": "3",
        "max-length": "12",
        "pattern": "^[a-z][a-z0-9-]*$",
        "required": "true",
    }
    assert rules["mtu"] == {"minimum": "68", "maximum": "9000"}
    assert rules["speed"] == {"enum": '["1g", "10g", "100g"]'}
    assert rules["weight"] == {"exclusive-minimum": "0", "exclusive-maximum": "100", "nullable": "true"}


def test_the_order_form_checks_the_schema_bounds_before_the_post(
    bounded_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    page = browser_page
    page.goto(f"{bounded_server.url}/inventory/link/new")
    order = page.get_by_role("button", name="Order")

    def says(name: str, text: str) -> None:
        expect(page.locator(f"[data-inline-error={name}]")).to_be_visible()
        expect(page.locator(f"[data-inline-error={name}]")).to_contain_text(text)

    order.click()  # nothing filled: the required name says so, nothing is posted
    says("name", "required")
    assert page.url.endswith("/inventory/link/new")
    for value, text in (
        ("ab", "at least 3 characters"),
        ("x" * 13, "at most 12 characters"),
        ("Eth0", "must match"),
    ):
        page.fill("#attr-name", value)
        says("name", text)
    page.fill("#attr-name", "eth-0")
    expect(page.locator("[data-inline-error=name]")).to_be_hidden()
    for value, text in (("67", "at least 68"), ("9001", "at most 9000"), ("big", "whole number")):
        page.fill("#attr-mtu", value)
        says("mtu", text)
    page.fill("#attr-speed", "40g")
    says("speed", "one of 1g, 10g, 100g")
    page.fill("#attr-weight", "100")
    says("weight", "less than 100")
    shoot(page, "order-form-inline-errors")
    with bounded_server.http() as api:
        before = api.get("/lsm/v1/service_inventory/link").json()
    order.click()
    assert page.url.endswith("/inventory/link/new")  # refused in the browser: nothing posted
    with bounded_server.http() as api:
        assert api.get("/lsm/v1/service_inventory/link").json() == before == []
    page.fill("#attr-mtu", "9000")
    page.fill("#attr-speed", "100g")
    page.fill("#attr-weight", "null")
    expect(page.locator("[data-inline-error]:visible")).to_have_count(0)
    order.click()
    page.wait_for_url("**/inventory/link/*-*")
    with bounded_server.http() as api:
        [made] = api.get("/lsm/v1/service_inventory/link").json()
    shown = made["candidate_attributes"] or made["active_attributes"]
    assert shown == {"name": "eth-0", "mtu": 9000, "speed": "100g", "weight": None}
