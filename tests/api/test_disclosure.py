"""What answers may tell about the server (``lsm.api.disclosure``): no traceback, no server path,
unless a caller who may see details asks for them with ``X-LSM-Debug: 1``."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request

from lsm.api import disclosure
from lsm.api.disclosure import redact, redact_report, redact_text
from lsm.store.database import Database
from tests.api.input_fixtures import all_instances, full_compile, served_box


def test_absolute_paths_are_cut_to_their_last_two_parts() -> None:
    assert redact_text('File "/srv/lsm/models/net/__init__.py", line 12') == 'File "net/__init__.py", line 12'
    assert redact_text("at /home/ops/venv/lib/python3.11/site-packages/x.py:3") == "at site-packages/x.py:3"
    for kept in ("std::File[host1,path=/etc/motd]", "see http://host/a/b/c", "a/b/c", "/health", "1/2"):
        assert redact_text(kept) == kept


def test_reports_lose_tracebacks_everywhere_and_paths_only_in_their_error() -> None:
    report = {
        "selected": {"box": ["/data/a/b"]},
        "error": {"message": "boom in /srv/m/net.py:3", "traceback": "...", "errors": [{"traceback": "x"}]},
        "stages": [{"traceback": "y"}],
    }
    assert redact_report(report) == {
        "selected": {"box": ["/data/a/b"]},
        "error": {"message": "boom in m/net.py:3", "errors": [{}]},
        "stages": [{}],
    }
    assert redact({"path": "/opt/srv/x.py", "traceback": "t"}) == {"path": "srv/x.py"}


def test_without_an_authenticated_caller_nobody_sees_details_even_when_asking() -> None:
    asking = Request({"type": "http", "method": "GET", "path": "/", "headers": [(b"x-lsm-debug", b"1")]})
    assert disclosure.asked_for_details(asking)
    assert not disclosure.may_see_details(asking)
    assert not disclosure.shows_details(asking)


def test_a_caller_who_may_see_details_and_asks_gets_the_traceback(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(disclosure, "may_see_details", lambda request: True)
    with served_box(db) as (engine, http):
        made = http.post("/lsm/v1/service_inventory/box", json={"attributes": {"name": "a"}}).json()
        patch: dict[str, Any] = {"current_version": made["version"], "attributes": {"text": "boom"}}
        assert http.patch(f"/lsm/v1/service_inventory/box/{made['id']}", json=patch).status_code == 200
        report = full_compile(engine, http)
        plain = http.get(f"/api/v1/compiles/{report['id']}").json()
        detailed = http.get(f"/api/v1/compiles/{report['id']}", headers={"X-LSM-Debug": "1"}).json()
        assert "traceback" not in plain["report"]["error"]
        assert "Traceback" in detailed["report"]["error"]["traceback"]
        assert len(all_instances(engine)) == 1
