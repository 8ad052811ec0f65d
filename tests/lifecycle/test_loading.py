"""Lifecycle files and the registry: entry points, operator folders, clear errors, duplicates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsm.errors import ConfigurationError, LifecycleInvalid, UnknownLifecycle
from lsm.lifecycle import ENTRY_POINT_GROUP, LifecycleRegistry, entry_point_files, load_lifecycle_file
from lsm.lifecycle import loading as loading_module

TINY = """\
name: {name}
initial_state: start
states:
  - name: start
  - name: up
    export_resources: true
transfers:
  - source: start
    target: up
    trigger: auto
"""


def write(folder: Path, filename: str, name: str = "tiny", text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    path.write_text(text if text is not None else TINY.format(name=name))
    return path


def test_the_real_entry_point_finds_the_bundled_lifecycles() -> None:
    files = entry_point_files()
    assert {f.name for f in files} >= {"simple.yaml", "simple_with_delete_validate.yaml"}
    registry = LifecycleRegistry.discover()
    assert {"simple", "simple_with_delete_validate"} <= set(registry.names())
    assert registry.names() == sorted(registry.names())
    source = registry.source("simple")
    assert source is not None and source.parent.name == "lsm_lifecycles"
    assert ENTRY_POINT_GROUP == "lsm.lifecycles"


def test_an_operator_folder_adds_its_lifecycles(tmp_path: Path) -> None:
    write(tmp_path / "ops", "mine.yaml", name="mine")
    write(tmp_path / "ops", "notes.txt", text="not a lifecycle")
    registry = LifecycleRegistry.discover(extra_paths=[tmp_path / "ops"])
    assert "mine" in registry and "simple" in registry
    assert registry.get("mine").initial_state == "start"
    assert registry.source("mine") == tmp_path / "ops" / "mine.yaml"


def test_a_name_defined_twice_names_both_files(tmp_path: Path) -> None:
    first = write(tmp_path / "a", "one.yaml", name="simple")
    with pytest.raises(LifecycleInvalid) as info:
        LifecycleRegistry.discover(extra_paths=[first.parent])
    err = info.value
    assert err.details["rule"] == "duplicate_lifecycle"
    assert "simple.yaml" in err.message and str(first) in err.message


def test_the_same_file_reached_twice_is_read_once() -> None:
    bundled = [f for f in entry_point_files() if f.name == "simple.yaml"]
    registry = LifecycleRegistry.discover(extra_paths=[bundled[0].parent])
    assert "simple" in registry


def test_a_missing_operator_folder_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        LifecycleRegistry.discover(extra_paths=[tmp_path / "nowhere"])


def test_an_unknown_lifecycle_is_a_404_listing_the_known_ones() -> None:
    registry = LifecycleRegistry.discover()
    with pytest.raises(UnknownLifecycle) as info:
        registry.get("complex")
    assert info.value.status == 404
    assert "simple" in info.value.details["known"]
    with pytest.raises(UnknownLifecycle):
        registry.machine("complex")


def test_machines_are_built_once_per_lifecycle() -> None:
    registry = LifecycleRegistry.discover()
    assert registry.machine("simple") is registry.machine("simple")
    assert registry.machine("simple").spec is registry.get("simple")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name: [unclosed", "not valid YAML"),
        ("- just\n- a list\n", "must be a mapping"),
        (TINY.format(name="bad").replace("trigger: auto", "trigger: whenever"), "transfers.0.trigger"),
        (TINY.format(name="bad").replace("target: up", "target: nowhere"), "unknown_state"),
    ],
)
def test_a_bad_file_is_rejected_naming_the_file(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, "bad.yaml", text=text)
    with pytest.raises(LifecycleInvalid) as info:
        load_lifecycle_file(path)
    assert info.value.message.startswith(f"{path}: ")
    assert fragment in info.value.message
    assert info.value.details["file"] == str(path)


def test_an_unreadable_file_is_rejected_naming_it(tmp_path: Path) -> None:
    with pytest.raises(LifecycleInvalid, match="cannot read"):
        load_lifecycle_file(tmp_path / "absent.yaml")


class FakeEntryPoint:
    def __init__(self, name: str, value: Any) -> None:
        self.name, self.value, self._value = name, f"fake:{name}", value

    def load(self) -> Any:
        if isinstance(self._value, Exception):
            raise self._value
        return self._value


def with_entry_points(monkeypatch: pytest.MonkeyPatch, *eps: FakeEntryPoint) -> None:
    def fake(group: str) -> list[FakeEntryPoint]:
        assert group == ENTRY_POINT_GROUP
        return list(eps)

    monkeypatch.setattr(loading_module, "entry_points", fake)


@pytest.mark.parametrize(
    "shape",
    [
        lambda folder, file: lambda: [file],  # a callable returning paths
        lambda folder, file: str(file),  # a path
        lambda folder, file: [folder],  # a list holding a directory
        lambda folder, file: folder,  # a directory
    ],
    ids=["callable", "path", "list-of-dir", "dir"],
)
def test_an_entry_point_may_give_a_callable_a_path_or_paths(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shape: Callable[[Path, Path], Any]
) -> None:
    file = write(tmp_path / "plugin", "plugged.yaml", name="plugged")
    with_entry_points(monkeypatch, FakeEntryPoint("plugin", shape(file.parent, file)))
    assert LifecycleRegistry.discover().names() == ["plugged"]


@pytest.mark.parametrize("value", [ImportError("no module"), 42])
def test_a_broken_entry_point_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, value: Any) -> None:
    with_entry_points(monkeypatch, FakeEntryPoint("broken", value))
    with pytest.raises(ConfigurationError, match="'broken'"):
        LifecycleRegistry.discover()
