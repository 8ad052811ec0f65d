"""Selector discovery: the real ``lsm.selectors`` entry points, the model's SELECTORS, errors."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from lsm.errors import ConfigurationError, UnknownSelector
from lsm.selection import (
    DEFAULT_SELECTOR,
    OwnerTreeSelector,
    Selector,
    available_selectors,
    selector_for,
    selector_names,
)
from lsm.store.environments.settings import EnvironmentSettings

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = {"owner_tree", "relation_closure", "entity", "state", "attribute"}


class FakeModel:
    def __init__(self, selectors: Mapping[str, Any]) -> None:
        self.selectors = selectors


class ModelTree(Selector):
    name = "owner_tree"

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        return {}


def test_bundled_selectors_are_found_through_the_real_entry_points() -> None:
    found = available_selectors()
    assert set(found) >= BUNDLED
    assert found["owner_tree"] is OwnerTreeSelector
    assert found["relation_closure"].__module__ == "lsm_selectors.relation_closure"
    assert {found[n].__module__ for n in ("entity", "state", "attribute")} == {"lsm_selectors.filters"}
    for name in BUNDLED:
        assert found[name].name == name  # errors and reports use the registered name


def test_the_default_setting_names_a_known_selector() -> None:
    assert EnvironmentSettings().selector == DEFAULT_SELECTOR
    assert selector_for(DEFAULT_SELECTOR) is OwnerTreeSelector


def test_a_models_selectors_join_and_win_a_name_clash() -> None:
    model = FakeModel({"owner_tree": ModelTree, "mine": ModelTree})
    assert selector_for("owner_tree", model) is ModelTree
    assert selector_for("mine", model) is ModelTree
    found = available_selectors(model)
    assert found["owner_tree"] is ModelTree and found["mine"] is ModelTree
    assert BUNDLED | {"mine"} <= set(selector_names(model))


def test_an_unknown_selector_lists_the_known_names() -> None:
    with pytest.raises(UnknownSelector) as info:
        selector_for("nope", FakeModel({"mine": ModelTree}))
    assert info.value.status == 404
    assert BUNDLED | {"mine"} <= set(info.value.details["known"])
    assert "owner_tree" in info.value.message and "mine" in info.value.message


def test_a_model_value_that_is_not_a_selector_class_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        selector_for("bad", FakeModel({"bad": lambda view, catalog: None}))
    assert info.value.details["selector"] == "bad"


def test_the_core_never_imports_the_bundled_selectors() -> None:
    offenders = []
    for path in (ROOT / "lsm").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path}: {n}" for n in names if n.split(".")[0] in ("lsm_selectors", "selectors")]
    assert offenders == []


def test_the_selection_layer_imports_only_layers_below_it() -> None:
    allowed = {"lsm.selection", "lsm.catalog", "lsm.model", "lsm.lifecycle", "lsm.store", "lsm.errors"}
    offenders = []
    for path in (ROOT / "lsm" / "selection").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if (
                module
                and module.startswith("lsm")
                and not any(module == a or module.startswith(a + ".") for a in allowed)
            ):
                offenders.append(f"{path.name}: {module}")
    assert offenders == []
