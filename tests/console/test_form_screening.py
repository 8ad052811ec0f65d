"""Console form posts are screened like API bodies (issue 31, M6): a NUL in a form field is a
422 naming the field on both backends, and nothing is stored."""

from __future__ import annotations

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.console.ops_fixtures import Pages


def test_a_nul_in_an_order_form_is_a_422_naming_the_field_and_stores_nothing(engine: ApiRuntime) -> None:
    pages = Pages(engine)
    token = pages.csrf(pages.get("/inventory/thing/new"))
    answer = pages.post("/inventory/thing", data={"csrf_token": token, "attr.name": "bad\x00name"})
    assert answer.status_code == 422, answer.text
    assert "attr.name" in answer.text and "NUL" in answer.text
    assert engine.facades.inventory.list_instances(RequestContext.local(), "thing") == []

    fine = pages.post("/inventory/thing", data={"csrf_token": token, "attr.name": "good"})
    assert fine.status_code == 303, fine.text
    thing = engine.facades.inventory.get_instance(RequestContext.local(), "thing", "name=good")
    state = pages.post(
        f"/inventory/thing/{thing.id}/state",
        data={"csrf_token": token, "current_version": "1", "target_state": "up", "message": "a\x00b"},
    )
    assert state.status_code == 422 and "message" in state.text
    log = engine.facades.inventory.instance_log(RequestContext.local(), "thing", thing.id)
    assert [line.trigger for line in log] == ["create"]
