"""The compliance pages through the real app (``httpx.ASGITransport``), on both backends, with
the engine's own loop deploying and checking real files: the form asks for a report (CSRF
checked), the report page shows its counts and rows, filters by outcome, and refuses bad input
with a typed error page naming the parameter."""

from __future__ import annotations

import re
from pathlib import Path

from lsm.runtime.wiring import ApiRuntime
from tests.console.ops_fixtures import Pages, deployed_engine, wait_for
from tests.console.test_operations_pages import assert_error_page, up_routers

__all__ = ["deployed_engine"]


def test_asking_for_a_report_from_the_page_and_reading_it(
    deployed_engine: ApiRuntime, tmp_path: Path
) -> None:
    pages = Pages(deployed_engine)
    up_routers(pages, "edge-1", "edge-2")
    (tmp_path / "state/routers/edge-1.conf").write_text("drifted by hand")

    listing = pages.get("/compliance")
    assert listing.status_code == 200 and "No compliance report yet" in listing.text
    refused = pages.post("/compliance", data={"agents": "routers"})  # no CSRF token
    assert_error_page(refused, 403, "CSRF")
    asked = pages.post("/compliance", data={"agents": "routers", "csrf_token": pages.csrf(listing)})
    assert asked.status_code == 303, asked.text
    location = asked.headers["location"]
    report_id = location.rsplit("/", 1)[1]

    wait_for(lambda: pages.api(f"/api/v1/compliance/{report_id}")["status"] == "done", "the report done")
    page = pages.get(location)
    assert page.status_code == 200
    assert re.findall(r'data-resource="([^"]+)"', page.text) == [
        "test::File[routers,path=routers/edge-1.conf]",
        "test::File[routers,path=routers/edge-2.conf]",
    ]
    assert "drifted by hand" in page.text and "agents routers;" in page.text
    drifted = pages.get(location, params={"outcome": "drifted"})
    assert re.findall(r'data-resource="([^"]+)"', drifted.text) == [
        "test::File[routers,path=routers/edge-1.conf]"
    ]
    assert f'data-report="{report_id}"' in pages.get("/compliance").text
    assert (tmp_path / "state/routers/edge-1.conf").read_text() == "drifted by hand"  # nothing repaired

    assert_error_page(pages.get(location, params={"outcome": "sideways"}), 422, "outcome must be one of")
    assert_error_page(
        pages.get("/compliance/00000000-0000-0000-0000-000000000000"), 404, "no compliance report"
    )
    bad = pages.post("/compliance", data={"agents": "", "types": " , ", "csrf_token": pages.csrf(listing)})
    assert_error_page(bad, 422, "types: name at least one")  # an empty field is left out, a blank list is not
