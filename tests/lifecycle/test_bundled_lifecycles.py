"""The bundled lifecycles are a contract: docs/semantics.md §1, transfer for transfer.

The expected data below is written out by hand from docs/semantics.md §1, not derived from
the YAML, so that an edit of the YAML that the documented table does not follow makes this
test fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lsm.lifecycle import LifecycleSpec, entry_point_files, load_lifecycle_file

# Found the way the engine finds them: through the ``lsm.lifecycles`` entry point.
BUNDLED = {p.stem: p for p in entry_point_files() if p.parent.name == "lsm_lifecycles"}

# name: (label, export_resources, validate_self, validate_others, purge_resources, deleted)
C, A = "candidate", "active"
SIMPLE_STATES: dict[str, tuple[str, bool, str | None, str | None, bool, bool]] = {
    "start": ("info", False, C, None, False, False),
    "acknowledged": ("info", False, C, None, False, False),
    "rejected": ("danger", False, C, None, False, False),
    "creating": ("info", True, A, A, False, False),
    "up": ("success", True, A, A, False, False),
    "failed": ("danger", True, A, A, False, False),
    "update_start": ("info", True, C, A, False, False),
    "update_start_failed": ("warning", True, C, A, False, False),
    "update_acknowledged": ("info", True, C, A, False, False),
    "update_acknowledged_failed": ("info", True, C, A, False, False),
    "update_rejected": ("info", True, C, A, False, False),
    "update_rejected_failed": ("info", True, C, A, False, False),
    "update_inprogress": ("info", True, A, A, False, False),
    "update_failed": ("info", True, A, A, False, False),
    "rollback": ("info", True, A, A, False, False),
    "deleting": ("info", True, A, A, True, False),
    "delete_failed": ("danger", True, A, A, True, False),
    "terminated": ("info", False, None, None, False, True),
}

# (source, target, error, trigger, validate, target_operation), numbered as in docs/semantics.md §1
R = "resource_based"
X = "export_failed"
SIMPLE_TRANSFERS: list[tuple[str, str, str | None, str, bool, str | None]] = [
    ("start", "acknowledged", "rejected", "auto", True, None),  # 1
    ("acknowledged", "creating", None, "auto", False, "promote"),  # 2
    ("creating", "up", "failed", R, False, None),  # 3
    ("up", "up", "failed", R, False, None),  # 4
    ("failed", "up", "failed", R, False, None),  # 5
    ("up", "update_start", None, "on_update", False, None),  # 6
    ("update_start", "update_acknowledged", "update_rejected", "auto", True, None),  # 7
    ("update_start_failed", "update_acknowledged_failed", "update_rejected_failed", "auto", True, None),  # 8
    ("update_acknowledged", "update_inprogress", None, "auto", False, "promote"),  # 9
    ("update_acknowledged_failed", "update_inprogress", None, "auto", False, "promote"),  # 10
    ("update_inprogress", "up", "update_failed", R, False, None),  # 11
    ("update_start", "update_start", "update_start_failed", R, False, None),  # 12
    ("update_start_failed", "update_start", "update_start_failed", R, False, None),  # 13
    ("update_rejected", "update_rejected", "update_rejected_failed", R, False, None),  # 14
    ("update_rejected_failed", "update_rejected", "update_rejected_failed", R, False, None),  # 15
    ("update_rejected", "up", None, "api_set_state", False, "clear candidate"),  # 16
    ("update_rejected_failed", "failed", None, "api_set_state", False, "clear candidate"),  # 17
    ("update_failed", "rollback", None, "api_set_state", False, "rollback"),  # 18
    ("rollback", "up", "failed", R, False, None),  # 19
    ("update_failed", "up", "update_failed", R, False, None),  # 20
    ("rejected", "start", None, "on_update", False, None),  # 21
    ("update_rejected", "update_start", None, "on_update", False, None),  # 22
    ("update_rejected_failed", "update_start_failed", None, "on_update", False, None),  # 23
    ("deleting", "terminated", "deleting", R, False, None),  # 24
    ("rejected", "terminated", None, "on_delete", False, None),  # 25
    ("up", "deleting", None, "on_delete", False, None),  # 26
    ("creating", "deleting", None, "on_delete", False, None),  # 27
    ("update_failed", "deleting", None, "on_delete", False, None),  # 28
    ("failed", "deleting", None, "on_delete", False, None),  # 29
    *[
        ("creating", "failed", None, X, False, None),  # 30
        ("update_inprogress", "update_failed", None, X, False, None),  # 31
        ("rollback", "failed", None, X, False, None),  # 32
        ("deleting", "delete_failed", None, X, False, None),  # 33
        ("delete_failed", "terminated", "delete_failed", R, False, None),  # 34
        ("delete_failed", "deleting", None, "on_delete", False, None),  # 35
    ],
]
#: the transfers of a failed export, the same in both lifecycles (simple: 30-35)
FAILED_EXPORT = SIMPLE_TRANSFERS[29:]

DELETE_VALIDATED = ["up", "creating", "failed", "update_failed"]
DV_STATES = {
    **SIMPLE_STATES,
    **{f"delete_validating_{x}": ("info", True, None, A, False, False) for x in DELETE_VALIDATED},
}
DV_TRANSFERS = [
    *SIMPLE_TRANSFERS[:25],
    ("up", "delete_validating_up", None, "on_delete", False, None),  # 26
    ("creating", "delete_validating_creating", None, "on_delete", False, None),  # 27
    ("update_failed", "delete_validating_update_failed", None, "on_delete", False, None),  # 28
    ("failed", "delete_validating_failed", None, "on_delete", False, None),  # 29
    ("delete_validating_up", "delete_validating_up", "delete_validating_up", R, False, None),  # 30
    ("delete_validating_up", "deleting", "up", "auto", True, None),  # 31
    (
        "delete_validating_creating",
        "delete_validating_creating",
        "delete_validating_creating",
        R,
        False,
        None,
    ),
    ("delete_validating_creating", "deleting", "creating", "auto", True, None),  # 33
    ("delete_validating_failed", "delete_validating_failed", "delete_validating_failed", R, False, None),
    ("delete_validating_failed", "deleting", "failed", "auto", True, None),  # 35
    (
        "delete_validating_update_failed",
        "delete_validating_update_failed",
        "delete_validating_update_failed",
        R,
        False,
        None,
    ),  # 36
    ("delete_validating_update_failed", "deleting", "update_failed", "auto", True, None),  # 37
    *FAILED_EXPORT,  # 38-43
]

CONTRACT = {
    "simple": (SIMPLE_STATES, SIMPLE_TRANSFERS),
    "simple_with_delete_validate": (DV_STATES, DV_TRANSFERS),
}


@pytest.fixture(params=sorted(CONTRACT))
def bundled(request: pytest.FixtureRequest) -> LifecycleSpec:
    return load_lifecycle_file(BUNDLED[request.param])


def test_both_bundled_lifecycles_are_shipped() -> None:
    assert set(BUNDLED) == set(CONTRACT)
    assert all(isinstance(p, Path) and p.suffix == ".yaml" for p in BUNDLED.values())


@pytest.mark.parametrize(
    ("name", "states", "transfers"), [("simple", 18, 35), ("simple_with_delete_validate", 22, 43)]
)
def test_bundled_lifecycle_sizes(name: str, states: int, transfers: int) -> None:
    spec = load_lifecycle_file(BUNDLED[name])
    assert spec.name == name
    assert (len(spec.states), len(spec.transfers)) == (states, transfers)


def test_bundled_states_match_semantics(bundled: LifecycleSpec) -> None:
    expected, _ = CONTRACT[bundled.name]
    actual = {
        s.name: (
            s.label,
            s.export_resources,
            s.validate_self,
            s.validate_others,
            s.purge_resources,
            s.deleted,
        )
        for s in bundled.states
    }
    assert actual == expected
    assert [s.name for s in bundled.states][: len(SIMPLE_STATES)] == list(SIMPLE_STATES)


def test_bundled_transfers_match_semantics_in_order(bundled: LifecycleSpec) -> None:
    _, expected = CONTRACT[bundled.name]
    actual = [
        (t.source, t.target, t.error, t.trigger, t.validate, t.target_operation) for t in bundled.transfers
    ]
    for number, (got, want) in enumerate(zip(actual, expected, strict=True), start=1):
        assert got == want, f"transfer {number} of {bundled.name}"


def test_bundled_lifecycles_start_in_start_without_alternatives(bundled: LifecycleSpec) -> None:
    assert bundled.initial_state == "start"
    assert bundled.alternative_initial_states == []


def test_bundled_transfers_have_no_error_operation_nor_config_name(bundled: LifecycleSpec) -> None:
    assert all(t.error_operation is None and t.config_name is None for t in bundled.transfers)


def test_bundled_transfers_are_described(bundled: LifecycleSpec) -> None:
    assert all(t.description.strip() for t in bundled.transfers)
    assert all(s.description.strip() for s in bundled.states)


def test_deploy_results_keep_the_desired_state_except_when_deletion_completes(bundled: LifecycleSpec) -> None:
    for t in bundled.transfers:
        flags = (t.target_same_desired_state, t.error_same_desired_state)
        if (t.source, t.target) in (("deleting", "terminated"), ("delete_failed", "terminated")):
            assert flags == (False, True)
        elif t.trigger == "resource_based":
            assert flags == (True, True), str(t)
        else:
            assert flags == (False, False), str(t)


def test_only_the_retry_of_a_failed_delete_requests_an_export(bundled: LifecycleSpec) -> None:
    asking = [(t.source, t.target, t.trigger) for t in bundled.transfers if t.request_export]
    assert asking == [("delete_failed", "deleting", "on_delete")]


def test_every_state_that_waits_on_an_export_has_a_way_out_of_a_failed_one(bundled: LifecycleSpec) -> None:
    """creating, update_inprogress, rollback and deleting wait on an export: each has an
    export_failed transfer to a state that accepts a delete (nothing stranded, semantics §6)."""
    failing = {t.source: t.target for t in bundled.transfers if t.trigger == X}
    assert failing == {
        "creating": "failed",
        "update_inprogress": "update_failed",
        "rollback": "failed",
        "deleting": "delete_failed",
    }
    deletable = {t.source for t in bundled.transfers if t.trigger == "on_delete"}
    # the validate-on-delete lifecycle goes through delete_validating_* states, also on_delete
    assert set(failing.values()) <= deletable
