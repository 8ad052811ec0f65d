"""The checks of the orchestration function: versions, modifiers, identity, relations, states."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from lsm.errors import (
    IdentityConflict,
    InvalidAttributes,
    TransferNotAllowed,
    UnknownInstance,
    VersionConflict,
)
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.orchestration.helpers import Driver


def test_stale_current_version_is_a_409_and_changes_nothing(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    up = driver.reach("up")
    with pytest.raises(VersionConflict) as err:
        engine.facades.inventory.update_instance(
            RequestContext.local(), "thing", up.id, current_version=up.version - 1, attributes={"size": 3}
        )
    assert err.value.details["current_version"] == up.version
    with pytest.raises(VersionConflict):
        engine.facades.inventory.set_state(
            RequestContext.local(), "thing", up.id, current_version=up.version + 1, target_state="rollback"
        )
    with pytest.raises(VersionConflict):
        engine.facades.inventory.delete_instance(RequestContext.local(), "thing", up.id, current_version=1)
    assert driver.get(up) == up
    assert len(engine.facades.inventory.instance_log(RequestContext.local(), "thing", up.id)) == 4


@pytest.mark.parametrize(
    ("attributes", "path", "reason"),
    [
        ({"name": "a", "colour": "red"}, "colour", "unknown attribute"),
        ({"name": "a", "size": "big"}, "size", "valid integer"),
        ({"size": 3}, "name", "Field required"),
        ({"name": "a", "slot": 3}, "slot", "'r' attribute"),
    ],
)
def test_invalid_create_names_the_attribute(
    engine: ApiRuntime, attributes: dict[str, Any], path: str, reason: str
) -> None:
    with pytest.raises(InvalidAttributes) as err:
        engine.facades.inventory.create_instance(RequestContext.local(), "thing", attributes)
    assert any(e["path"] == path and reason in e["reason"] for e in err.value.errors), err.value.errors
    assert (
        engine.facades.inventory.list_instances(RequestContext.local(), "thing", include_deleted=True) == []
    )


def test_changing_an_rw_attribute_is_refused(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    up = driver.reach("up")
    with pytest.raises(InvalidAttributes) as err:
        driver.update(up, name="other")
    assert err.value.errors == [
        {"path": "name", "reason": "'rw' attribute: set at creation, read-only afterwards"}
    ]
    assert driver.update(up, name=up.active_attributes["name"], size=4).state == "update_start"  # type: ignore[index]  # an instance that is up has its active set


def test_duplicate_identity_is_a_409_naming_the_clash(engine: ApiRuntime) -> None:
    first = engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": "same"})
    with pytest.raises(IdentityConflict) as err:
        engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": "same"})
    assert err.value.details == {
        "entity": "thing",
        "attribute": "name",
        "value": "same",
        "instance": first.id,
    }
    assert "name='same'" in err.value.message


def test_update_in_a_state_without_on_update_lists_what_is_allowed(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    creating = driver.reach("creating")
    with pytest.raises(TransferNotAllowed) as err:
        driver.update(creating, size=2)
    allowed = err.value.details["allowed"]
    assert {"trigger": "on_delete", "target": "deleting"} in allowed
    assert all(a["trigger"] != "on_update" for a in allowed)
    assert driver.get(creating) == creating


def test_lookup_by_identity_attribute(engine: ApiRuntime) -> None:
    created = engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": "findme"})
    assert (
        engine.facades.inventory.get_instance(RequestContext.local(), "thing", "name=findme").id == created.id
    )
    with pytest.raises(UnknownInstance):
        engine.facades.inventory.get_instance(RequestContext.local(), "thing", "name=nothere")
    with pytest.raises(UnknownInstance):
        engine.facades.inventory.get_instance(RequestContext.local(), "thing", str(uuid.uuid4()))


def test_relations_must_name_live_instances_of_the_right_entity(engine: ApiRuntime) -> None:
    thing = engine.facades.inventory.create_instance(RequestContext.local(), "thing", {"name": "owner"})
    missing = str(uuid.uuid4())
    with pytest.raises(InvalidAttributes) as err:
        engine.facades.inventory.create_instance(
            RequestContext.local(), "part", {"thing": missing, "label": "p"}
        )
    assert err.value.errors == [{"path": "thing", "reason": f"no live thing instance {missing}"}]
    part = engine.facades.inventory.create_instance(
        RequestContext.local(), "part", {"thing": thing.id, "label": "p1"}
    )
    assert part.owner == thing.id
    with pytest.raises(InvalidAttributes) as err:
        engine.facades.inventory.create_instance(
            RequestContext.local(), "part", {"thing": part.id, "label": "p2"}
        )
    assert err.value.errors == [{"path": "thing", "reason": f"instance {part.id} is a part, not a thing"}]


def test_given_instance_id_is_used_and_must_be_unique(engine: ApiRuntime) -> None:
    wanted = str(uuid.uuid4())
    created = engine.facades.inventory.create_instance(
        RequestContext.local(), "thing", {"name": "x"}, instance_id=wanted
    )
    assert created.id == wanted
    with pytest.raises(Exception, match="already used"):
        engine.facades.inventory.create_instance(
            RequestContext.local(), "thing", {"name": "y"}, instance_id=wanted
        )


def test_a_relation_to_an_instance_being_deleted_is_refused(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    deleting = driver.reach("deleting")
    with pytest.raises(InvalidAttributes) as err:
        engine.facades.inventory.create_instance(
            RequestContext.local(), "part", {"thing": deleting.id, "label": "late"}
        )
    assert err.value.errors == [
        {"path": "thing", "reason": f"thing {deleting.id} is being deleted (state deleting)"}
    ]


def test_expert_force_moves_anywhere_with_one_desired_state_rule(engine: ApiRuntime) -> None:
    from lsm.errors import InvalidInput
    from lsm.orchestration import ForceState

    driver = Driver(engine)
    rejected = driver.reach("rejected")
    command = ForceState(
        "thing", rejected.id, rejected.version, "creating", operation="promote", message="fixed by hand"
    )
    engine.orchestrator.execute(driver.ctx, command)
    forced = driver.get(rejected)
    assert (forced.state, forced.version) == ("creating", rejected.version + 1)
    assert forced.active_attributes == rejected.candidate_attributes and forced.candidate_attributes is None
    assert forced.desired_state_version == rejected.desired_state_version + 1  # it now exports
    last = engine.facades.inventory.instance_log(RequestContext.local(), "thing", forced.id)[-1]
    assert (last.source, last.target, last.trigger, last.message) == (
        "rejected",
        "creating",
        "expert",
        "fixed by hand",
    )
    with pytest.raises(InvalidInput):
        engine.orchestrator.execute(driver.ctx, ForceState("thing", forced.id, forced.version, "nowhere"))
    same = ForceState("thing", forced.id, forced.version, "up")  # exporting -> exporting, no operation
    engine.orchestrator.execute(driver.ctx, same)
    assert driver.get(forced).desired_state_version == forced.desired_state_version
