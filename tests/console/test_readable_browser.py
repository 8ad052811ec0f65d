"""Pages an operator reads all day, in headless Chromium against ``examples/router_port``.

The example is the Inmanta-style router/port binding: ports name their router (``lsm.Ref``) and
both entities run the ``simple_with_delete_validate`` lifecycle, the largest the project ships.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.testing import served_url
from tests.console.conftest import ROOT, ConsoleServer

PAGE_WIDTH = 1400


@pytest.fixture
def router_port_server(tmp_path: Path) -> Iterator[ConsoleServer]:
    """``lsm server`` on ``examples/router_port`` (authentication off), worker and agent inside."""
    config = ServerConfig(
        database_url=f"sqlite:///{tmp_path / 'lsm.db'}",
        model=str(ROOT / "examples" / "router_port"),
        embedded_worker=True,
        embedded_agent=True,
        state_dir=str(tmp_path / "state"),
    )
    engine = build_api(config)
    engine.start()
    try:
        with served_url(engine) as url:
            yield ConsoleServer(engine, url, tmp_path / "state")
    finally:
        engine.stop()
        engine.db.dispose()


def overlapping(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of text boxes that overlap (by more than half a pixel each way)."""
    found = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if (
                a["x"] + a["w"] - 0.5 > b["x"]
                and b["x"] + b["w"] - 0.5 > a["x"]
                and a["y"] + a["h"] - 0.5 > b["y"]
                and b["y"] + b["h"] - 0.5 > a["y"]
            ):
                found.append((a["text"], b["text"]))
    return found


TEXT_BOXES = """svg => Array.from(svg.querySelectorAll('text')).map(t => {
  const r = t.getBoundingClientRect();
  return {text: t.textContent, x: r.x, y: r.y, w: r.width, h: r.height};
})"""


def test_the_largest_lifecycle_drawing_has_no_overlapping_label_and_fits_the_page(
    router_port_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    if shutil.which("dot") is None:
        pytest.skip("no Graphviz dot: install Debian's graphviz package (.ci/run does)")
    page = browser_page
    page.goto(f"{router_port_server.url}/catalog/router")
    drawing = page.locator(".drawing svg.lsm-graph")
    expect(drawing).to_have_attribute("data-layout", "graphviz")
    expect(drawing).to_have_attribute("aria-label", "simple_with_delete_validate")
    boxes = drawing.evaluate(TEXT_BOXES)
    transfers = page.locator(".drawing svg g.edge").count()
    assert transfers >= 37 and len(boxes) > transfers, (transfers, len(boxes))
    assert overlapping(boxes) == []
    box = drawing.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PAGE_WIDTH, box
    assert page.evaluate("document.documentElement.scrollWidth") <= PAGE_WIDTH
    outside = [b for b in boxes if b["x"] < box["x"] - 1 or b["x"] + b["w"] > box["x"] + box["width"] + 1]
    assert outside == [], (box, outside)
    shoot(page, "lifecycle-fitted")
    # zoom around the pointer, pan, and a double click fits it again
    fitted = drawing.get_attribute("viewBox")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -300)
    zoomed = drawing.get_attribute("viewBox")
    assert zoomed is not None and fitted is not None
    assert zoomed != fitted and float(zoomed.split()[2]) < float(fitted.split()[2])
    shoot(page, "lifecycle-zoomed")
    drawing.dblclick()
    assert drawing.get_attribute("viewBox") == fitted


def order(server: ConsoleServer, entity: str, attributes: dict[str, Any]) -> dict[str, Any]:
    with server.http() as api:
        answer = api.post(f"/lsm/v1/service_inventory/{entity}", json={"attributes": attributes})
    assert answer.status_code == 200, answer.text
    made: dict[str, Any] = answer.json()
    return made


def test_the_port_inventory_shows_each_port_s_name_and_its_router_s_identity(
    router_port_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    server = router_port_server
    edge1 = order(server, "router", {"mgmt_ip": "10.0.0.1", "name": "edge-1"})
    edge2 = order(server, "router", {"mgmt_ip": "10.0.0.2", "name": "edge-2"})
    ports = {
        ("eth0", "10.0.0.1"): order(server, "port", {"name": "eth0", "router": edge1["id"]}),
        ("eth1", "10.0.0.1"): order(server, "port", {"name": "eth1", "router": edge1["id"], "mtu": 9000}),
        ("eth0", "10.0.0.2"): order(server, "port", {"name": "eth0", "router": edge2["id"]}),
    }
    page = browser_page
    page.goto(f"{server.url}/inventory/port")
    rows = page.locator("tr[data-instance]")
    expect(rows).to_have_count(3)
    for (name, router), made in ports.items():
        row = page.locator(f"tr[data-instance='{made['id']}']")
        expect(row.locator("td[data-attribute=name]")).to_have_text(name)
        owner = row.locator("td[data-owner] a")
        expect(owner).to_have_text(router)  # the router by its identity, not its UUID
        router_id = (edge1 if router == "10.0.0.1" else edge2)["id"]
        expect(owner).to_have_attribute("href", f"/inventory/router/{router_id}")
        expect(row.locator("td").first).to_contain_text(made["id"][:8])
        expect(row.locator("td").first.locator("code")).to_have_attribute("title", made["id"])
        expect(row.locator(".state-chip")).to_have_class(re.compile(r"label-\w+"))
    assert made["id"] not in page.locator("tbody").inner_text()  # no full UUID is printed
    shoot(page, "port-inventory")
    # the filter finds rows by any shown value: the router's identity and an attribute together
    page.get_by_label("Filter these rows").fill("10.0.0.1 9000")
    expect(page.locator("tr[data-instance]:visible")).to_have_count(1)
    expect(page.locator("tr[data-instance]:visible td[data-attribute=name]")).to_have_text("eth1")
    page.get_by_label("Filter these rows").fill("")
    # sorting by the owner column puts 10.0.0.2 last, and again first
    header = page.locator("th[data-sort]", has_text="router")
    header.click()
    expect(page.locator("tr[data-instance] td[data-owner]").last).to_have_text("10.0.0.2")
    header.click()
    expect(page.locator("tr[data-instance] td[data-owner]").first).to_have_text("10.0.0.2")
    # the copy button holds the whole id
    first = page.locator("tr[data-instance]").first
    full = first.get_attribute("data-instance")
    first.locator("button[data-copy]").click()
    expect(first.locator("button[data-copy]")).to_have_attribute("data-copied", str(full))
    shoot(page, "port-inventory-sorted")


def test_ordering_a_port_picks_its_router_by_identity(
    router_port_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    server = router_port_server
    order(server, "router", {"mgmt_ip": "10.0.0.1", "name": "edge-1"})
    edge2 = order(server, "router", {"mgmt_ip": "10.0.0.2", "name": "edge-2"})
    page = browser_page
    page.goto(f"{server.url}/inventory/port/new")
    picker = page.locator("select#attr-router")
    expect(picker).to_have_attribute("data-picker", "router")
    labels = picker.locator("option").all_inner_texts()
    assert [label.split(" · ")[0] for label in labels[1:]] == ["10.0.0.1", "10.0.0.2"], labels
    # the search box narrows the routers and picks the first that matches
    page.get_by_label("search router").fill("0.2")
    expect(picker).to_have_value(edge2["id"])
    expect(picker.locator("option:not([hidden])")).to_have_count(2)  # the empty choice and 10.0.0.2
    page.fill("#attr-name", "eth7")
    shoot(page, "order-port-picker")
    page.get_by_role("button", name="Order").click()
    page.wait_for_url("**/inventory/port/*")
    port_id = page.url.rsplit("/", 1)[1]
    with server.http() as api:
        made = api.get(f"/lsm/v1/service_inventory/port/{port_id}").json()
    assert (made["candidate_attributes"] or made["active_attributes"])["router"] == edge2["id"]
    assert made["owner"] == edge2["id"]
    page.goto(f"{server.url}/inventory/port")
    expect(page.locator(f"tr[data-instance='{port_id}'] td[data-owner]")).to_have_text("10.0.0.2")


def test_the_update_form_offers_only_rw_plus_and_fields_check_their_type_before_the_post(
    router_port_server: ConsoleServer, browser_page: Page, shoot: Callable[[Page, str], Path]
) -> None:
    server = router_port_server
    edge1 = order(server, "router", {"mgmt_ip": "10.0.0.1", "name": "edge-1"})
    port = order(server, "port", {"name": "eth0", "router": edge1["id"]})
    page = browser_page
    page.goto(f"{server.url}/inventory/port/{port['id']}")
    form = page.locator("form[data-action=update]")
    expect(form.locator("input[name='attr.mtu']")).to_be_enabled()
    expect(form.locator("input[name='attr.vlan']")).to_be_enabled()
    for fixed in ("name", "router"):
        expect(form.locator(f"input[name='attr.{fixed}']")).to_have_count(0)
        expect(form.locator(f"#attr-{fixed}")).to_be_disabled()
        expect(form.locator(f"[data-fixed-reason={fixed}]")).to_contain_text("read-only afterwards")
    # a value that is not of the attribute's type is refused in the browser: nothing is posted
    form.locator("#attr-mtu").fill("big")
    assert form.locator("#attr-mtu").evaluate("input => input.validity.patternMismatch")
    version = page.locator("[data-instance-version]").inner_text()
    form.locator("button").click()
    assert page.url.endswith(f"/inventory/port/{port['id']}")
    expect(page.locator("[data-instance-version]")).to_have_text(version)
    shoot(page, "update-form")
    page.goto(f"{server.url}/inventory/port/new")
    page.fill("#attr-name", "eth1")
    page.get_by_label("search router").fill("10.0.0.1")
    page.fill("#attr-mtu", "1500.5")
    page.get_by_role("button", name="Order").click()
    assert page.url.endswith("/inventory/port/new")  # the browser kept the form: not a whole number
    assert page.locator("#attr-mtu").evaluate("input => !input.validity.valid")
