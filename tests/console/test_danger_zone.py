"""The instance page's danger zone: shown to admins while expert_mode is on, and its forms go
through the same expert calls as the API (the setting, the reason, the log, the audit)."""

from __future__ import annotations

from collections.abc import Callable

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.console.ops_fixtures import Pages

LOCAL = RequestContext.local()


def _token(engine: ApiRuntime, role: str) -> str:
    return engine.facades.tokens.create(LOCAL, role, {"default": role}).token


def test_the_danger_zone_is_for_admins_while_the_setting_is_on(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine: ApiRuntime = engine_factory(config={"auth": {"enabled": True}})
    thing = engine.facades.inventory.create_instance(LOCAL, "thing", {"name": "stuck"})
    admin, operator = Pages(engine, _token(engine, "admin")), Pages(engine, _token(engine, "operator"))
    page = f"/inventory/thing/{thing.id}"

    assert "data-danger-zone" not in admin.get(page).text  # the setting is off
    engine.facades.environments.set_setting(LOCAL, "expert_mode", True)
    shown = admin.get(page)
    assert "data-danger-zone" in shown.text and 'data-action="expert-state"' in shown.text
    assert "data-danger-zone" not in operator.get(page).text  # an operator never sees it

    token = admin.csrf(shown)
    form = {"csrf_token": token, "current_version": "1", "state": "up"}
    blank = admin.post(f"{page}/expert/state", data={**form, "reason": " "})
    assert blank.status_code == 422 and "reason" in blank.text
    denied = operator.post(
        f"{page}/expert/state", data={**form, "csrf_token": operator.csrf(operator.get(page))}
    )
    assert denied.status_code == 403
    forced = admin.post(f"{page}/expert/state", data={**form, "reason": "console fix"})
    assert forced.status_code == 303, forced.text
    assert engine.facades.inventory.get_instance(LOCAL, "thing", thing.id).state == "up"

    bad = admin.post(
        f"{page}/expert/attributes",
        data={"csrf_token": token, "current_version": "2", "set": "active", "value": "{", "reason": "x"},
    )
    assert bad.status_code == 422 and "value" in bad.text
    gone = admin.post(
        f"{page}/expert/destroy",
        data={"csrf_token": token, "current_version": "2", "purge_resources": "on", "reason": "scrapped"},
    )
    assert gone.status_code == 303, gone.text
    after = engine.facades.inventory.get_instance(LOCAL, "thing", thing.id)
    assert (after.state, after.deleted) == ("terminated", True)
    audit = engine.facades.audit.list_audit(LOCAL, action="expert")
    assert [(a.action, a.details["reason"]) for a in audit] == [
        ("expert.destroy", "scrapped"),
        ("expert.state", "console fix"),
    ]
