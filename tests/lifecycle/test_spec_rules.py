"""Every consistency rule of a lifecycle rejects a broken definition, naming rule and culprit."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from lsm.errors import LifecycleInvalid
from lsm.lifecycle import LifecycleSpec, StateSpec, TransferSpec


def spec(states: list[Any], transfers: list[dict[str, Any]], **fields: Any) -> LifecycleSpec:
    """A small lifecycle: states by name (or as dicts), transfers as dicts."""
    return LifecycleSpec.from_data(
        {
            "name": "tiny",
            "initial_state": fields.pop("initial_state", "start"),
            "states": [{"name": s} if isinstance(s, str) else s for s in states],
            "transfers": transfers,
            **fields,
        }
    )


def t(source: str, target: str, trigger: str = "auto", **fields: Any) -> dict[str, Any]:
    return {"source": source, "target": target, "trigger": trigger, **fields}


def rejected(states: list[Any], transfers: list[dict[str, Any]], **fields: Any) -> LifecycleInvalid:
    with pytest.raises(LifecycleInvalid) as info:
        spec(states, transfers, **fields)
    assert info.value.details["lifecycle"] == "tiny"
    return info.value


def test_a_consistent_lifecycle_is_accepted_and_indexed() -> None:
    lifecycle = spec(
        ["start", "up", {"name": "gone", "deleted": True}],
        [t("start", "up"), t("up", "gone", "on_delete"), t("up", "start", "api_set_state")],
    )
    assert lifecycle.state("up").name == "up"
    assert [x.target for x in lifecycle.transfers_from("up")] == ["gone", "start"]
    assert lifecycle.transfers_from("gone") == []
    with pytest.raises(KeyError, match="nope"):
        lifecycle.state("nope")


def test_duplicate_state_names_are_rejected() -> None:
    err = rejected(["start", "up", "up"], [t("start", "up")])
    assert err.details["rule"] == "duplicate_state"
    assert err.details["state"] == "up"
    assert "'up' is defined twice" in err.message


@pytest.mark.parametrize(
    ("fields", "transfers", "culprit"),
    [
        ({"initial_state": "nowhere"}, [t("start", "up")], "nowhere"),
        ({"alternative_initial_states": ["elsewhere"]}, [t("start", "up")], "elsewhere"),
        ({}, [t("limbo", "up")], "limbo"),
        ({}, [t("start", "limbo")], "limbo"),
        ({}, [t("start", "up", validate=True, error="limbo")], "limbo"),
    ],
)
def test_unknown_states_are_rejected(
    fields: dict[str, Any], transfers: list[dict[str, Any]], culprit: str
) -> None:
    err = rejected(["start", "up"], transfers, **fields)
    assert err.details["rule"] == "unknown_state"
    assert err.details["state"] == culprit
    assert repr(culprit) in err.message


def test_unreachable_states_are_rejected() -> None:
    err = rejected(["start", "up", "island"], [t("start", "up"), t("island", "up", "on_update")])
    assert err.details["rule"] == "unreachable_state"
    assert err.details["state"] == "island"
    assert "'island' cannot be reached" in err.message


def test_alternative_initial_states_and_error_edges_count_as_reachable() -> None:
    lifecycle = spec(
        ["start", "up", "bad", "imported"],
        [t("start", "up", validate=True, error="bad"), t("imported", "up", "on_update")],
        alternative_initial_states=["imported"],
    )
    assert lifecycle.initial_states == ["start", "imported"]


@pytest.mark.parametrize("trigger", ["on_update", "on_delete", "resource_based"])
def test_two_transfers_with_one_trigger_from_one_state_are_rejected(trigger: str) -> None:
    err = rejected(["start", "a", "b"], [t("start", "a", trigger), t("start", "b", trigger)])
    assert err.details["rule"] == "duplicate_trigger"
    assert err.details["state"] == "start"
    assert f"two {trigger} transfers" in err.message


def test_api_set_state_transfers_are_duplicates_only_with_the_same_target() -> None:
    spec(["start", "a", "b"], [t("start", "a", "api_set_state"), t("start", "b", "api_set_state")])
    err = rejected(["start", "a"], [t("start", "a", "api_set_state"), t("start", "a", "api_set_state")])
    assert err.details["rule"] == "duplicate_trigger"
    assert err.details["transfer"] == "start -> a [api_set_state]"


def test_more_than_one_auto_transfer_from_a_state_is_rejected() -> None:
    err = rejected(["start", "a", "b"], [t("start", "a"), t("start", "b")])
    assert err.details["rule"] == "multiple_auto"
    assert "more than one auto transfer" in err.message


@pytest.mark.parametrize("trigger", ["on_update", "on_delete", "resource_based"])
def test_validate_is_only_for_auto_and_api_set_state(trigger: str) -> None:
    err = rejected(["start", "a"], [t("start", "a", trigger, validate=True)])
    assert err.details["rule"] == "validate_trigger"
    assert err.details["transfer"] == f"start -> a [{trigger}]"


@pytest.mark.parametrize("trigger", ["auto", "api_set_state", "on_update", "on_delete"])
def test_an_error_state_on_a_transfer_that_cannot_fail_is_rejected(trigger: str) -> None:
    err = rejected(["start", "a", "bad"], [t("start", "a", trigger, error="bad")])
    assert err.details["rule"] == "error_cannot_fail"
    assert "cannot fail" in err.message


def test_validate_and_resource_based_transfers_may_have_an_error_state() -> None:
    spec(
        ["start", "a", "bad"],
        [t("start", "a", validate=True, error="bad"), t("a", "a", "resource_based", error="bad")],
    )


def test_an_error_operation_needs_an_error_state() -> None:
    err = rejected(["start", "a"], [t("start", "a", validate=True, error_operation="clear candidate")])
    assert err.details["rule"] == "error_operation_without_error"


def test_a_deleted_state_has_no_way_out() -> None:
    err = rejected(
        ["start", {"name": "gone", "deleted": True}],
        [t("start", "gone", "on_delete"), t("gone", "start", "api_set_state")],
    )
    assert err.details["rule"] == "transfer_from_deleted"
    assert err.details["state"] == "gone"


def test_config_name_only_switches_auto_transfers() -> None:
    spec(["start", "a"], [t("start", "a", config_name="auto_creating")])
    err = rejected(["start", "a"], [t("start", "a", "on_update", config_name="x")])
    assert err.details["rule"] == "config_name_not_auto"


def test_field_errors_come_out_as_lifecycle_invalid_naming_the_path() -> None:
    with pytest.raises(LifecycleInvalid) as info:
        spec(["start", {"name": "up", "label": "purple"}], [t("start", "up", "sometimes")], colour="red")
    err = info.value
    assert err.details["rule"] == "schema"
    paths = {e["path"] for e in err.details["errors"]}
    assert {"states.1.label", "transfers.0.trigger", "colour"} <= paths
    assert "states.1.label" in err.message


def test_a_lifecycle_must_be_a_mapping() -> None:
    with pytest.raises(LifecycleInvalid, match="must be a mapping"):
        LifecycleSpec.from_data(["not", "a", "mapping"], source="x.yaml")


def test_state_names_cannot_contain_the_trigger_separator() -> None:
    with pytest.raises(ValidationError):
        StateSpec(name="a:error")


def test_specs_are_frozen() -> None:
    transfer = TransferSpec(source="a", target="b", trigger="auto")
    with pytest.raises(ValidationError):
        transfer.target = "c"  # type: ignore[misc]  # assigning to a frozen spec is the point


def test_direct_construction_also_checks_the_rules() -> None:
    with pytest.raises(LifecycleInvalid, match="unreachable"):
        LifecycleSpec(
            name="tiny",
            initial_state="a",
            states=[StateSpec(name="a"), StateSpec(name="b")],
            transfers=[],
        )


EXPORTING = [{"name": "start", "export_resources": True}, {"name": "lost", "export_resources": True}]


def test_a_failed_export_transfer_leaves_an_exporting_state() -> None:
    lifecycle = spec(EXPORTING, [t("start", "lost", "export_failed")])
    assert [x.trigger for x in lifecycle.transfers_from("start")] == ["export_failed"]


def test_a_failed_export_transfer_from_a_state_that_exports_nothing_is_rejected() -> None:
    err = rejected(["start", "lost"], [t("start", "lost", "export_failed")])
    assert err.details["rule"] == "export_failed_source"
    assert err.details["transfer"] == "start -> lost [export_failed]"
    assert "exports nothing" in err.message


def test_two_failed_export_transfers_from_one_state_are_rejected() -> None:
    states = [*EXPORTING, {"name": "other", "export_resources": True}]
    err = rejected(states, [t("start", "lost", "export_failed"), t("start", "other", "export_failed")])
    assert err.details["rule"] == "duplicate_trigger"
    assert "two export_failed transfers" in err.message


@pytest.mark.parametrize("field", [{"error": "start"}, {"validate": True}])
def test_a_failed_export_transfer_is_the_error_outcome_itself(field: dict[str, Any]) -> None:
    err = rejected(EXPORTING, [t("start", "lost", "export_failed", **field)])
    assert err.details["rule"] in ("error_cannot_fail", "validate_trigger")


def test_request_export_needs_an_exporting_target() -> None:
    spec(EXPORTING, [t("start", "lost", "on_delete", request_export=True)])
    err = rejected(
        [*EXPORTING, "gone"],
        [t("start", "lost", "on_delete"), t("lost", "gone", "on_delete", request_export=True)],
    )
    assert err.details["rule"] == "request_export_target"
    assert "'gone' exports nothing" in err.message
