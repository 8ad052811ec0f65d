"""Expert steps in the one state-changing transaction (lsm.orchestration.expert), on both
backends: the gate reads the committed setting, the desired state follows the rules of
docs/semantics.md §1 ("Expert steps"), and a refused step writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from lsm.errors import ExpertModeOff, InvalidAttributes, InvalidInput
from lsm.facade import RequestContext
from lsm.orchestration import ForceAttributes, ForceDestroy, ForceState
from lsm.runtime.wiring import ApiRuntime
from lsm.store.tables import EnvironmentRow
from tests.orchestration.helpers import Driver

LOCAL = RequestContext.local()


def _audit(engine: ApiRuntime) -> list[tuple[str, str]]:
    return [(a.action, a.details["reason"]) for a in engine.facades.audit.list_audit(LOCAL, action="expert")]


def test_the_gate_reads_the_committed_setting_not_a_cached_context(engine: ApiRuntime) -> None:
    engine.facades.environments.set_setting(LOCAL, "expert_mode", True)
    driver = Driver(engine)
    thing = driver.create()
    cached = engine.context(None)
    assert cached.settings.expert_mode  # what this process last saw
    with engine.db.write() as session:  # another process turns it off
        row = session.get(EnvironmentRow, cached.env_id)
        assert row is not None
        row.settings = {**row.settings, "expert_mode": False}
    with pytest.raises(ExpertModeOff) as refused:
        engine.orchestrator.execute(cached, ForceState("thing", thing.id, 1, "up", reason="late"))
    assert refused.value.details == {"setting": "expert_mode", "environment": cached.name}
    assert driver.get(thing).version == 1 and _audit(engine) == []


def test_expert_steps_change_the_desired_state_only_where_the_rules_say(engine: ApiRuntime) -> None:
    engine.facades.environments.set_setting(LOCAL, "expert_mode", True)
    driver = Driver(engine)
    ctx = engine.context(None)
    up = driver.reach("up")
    written = engine.orchestrator.execute(
        ctx,
        ForceAttributes(
            "thing", up.id, up.version, {"active": {**(up.active_attributes or {}), "slot": 7}}, "restore"
        ),
    )
    assert written.active_attributes is not None and written.active_attributes["slot"] == 7  # an r attribute
    assert written.desired_state_version == up.desired_state_version + 1  # the active set of `up` exports
    same = engine.orchestrator.execute(
        ctx, ForceAttributes("thing", up.id, written.version, {"rollback": None}, "x")
    )
    assert same.desired_state_version == written.desired_state_version  # rollback is not exported
    broken: dict[str, dict[str, Any] | None] = {"active": {**(up.active_attributes or {}), "size": "x"}}
    with pytest.raises(InvalidAttributes) as bad:
        engine.orchestrator.execute(ctx, ForceAttributes("thing", up.id, same.version, broken, "x"))
    assert [e["path"] for e in bad.value.errors] == ["active.size"]
    with pytest.raises(InvalidInput):
        engine.orchestrator.execute(ctx, ForceAttributes("thing", up.id, same.version, {"colour": {}}, "x"))
    left = engine.orchestrator.execute(ctx, ForceDestroy("thing", up.id, same.version, "scrapped"))
    assert (left.state, left.deleted, left.desired_state_version) == (
        "terminated",
        True,
        same.desired_state_version,
    )
    other = driver.reach("up")
    purged = engine.orchestrator.execute(ctx, ForceDestroy("thing", other.id, other.version, "gone", True))
    assert purged.desired_state_version == other.desired_state_version + 1
    assert _audit(engine) == [
        ("expert.destroy", "gone"),
        ("expert.destroy", "scrapped"),
        ("expert.attributes", "x"),
        ("expert.attributes", "restore"),
    ]
