"""Finding and reading lifecycle files: the bundled ones, plugins' and the operator's.

The core never imports ``lsm_lifecycles``: bundled lifecycles arrive through the entry-point group
``lsm.lifecycles`` exactly like a third-party plugin's, and an operator adds folders of YAML
files. Everything is loaded and checked up front, so that a bad file stops the server at start
instead of failing an instance later. This module reads files; it holds no engine state.

Example::

    registry = LifecycleRegistry.discover(extra_paths=["/etc/lsm/lifecycles"])
    registry.names()                       # ["simple", "simple_with_delete_validate", ...]
    registry.machine("simple").step("up", "on_update").destination   # "update_start"
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

import yaml

from lsm.errors import ConfigurationError, LifecycleInvalid, UnknownLifecycle
from lsm.lifecycle.machine import LifecycleMachine
from lsm.lifecycle.spec import LifecycleSpec

ENTRY_POINT_GROUP = "lsm.lifecycles"

PathLike = str | Path

#: libyaml's safe loader when PyYAML was built with it (about an order of magnitude faster than
#: the pure-Python one, which is most of an engine's start-up); the same documents either way
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_lifecycle_file(path: PathLike) -> LifecycleSpec:
    """Read and check one YAML lifecycle; any problem is a LifecycleInvalid naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LifecycleInvalid(
            f"{path}: cannot read lifecycle file: {exc.strerror or exc}", rule="file", file=str(path)
        ) from exc
    return _parse_lifecycle(text, str(path))


@functools.lru_cache(maxsize=256)
def _parse_lifecycle(text: str, source: str) -> LifecycleSpec:
    """Parse and check one file's text, once per (text, file name): a ``LifecycleSpec`` is frozen,
    so every registry that reads the same file may share it (a process that builds many engines,
    as the tests do, parses the bundled lifecycles once). A broken file is not cached: it raises
    again on every read."""
    try:
        data = yaml.load(text, Loader=SafeLoader)
    except yaml.YAMLError as exc:
        raise LifecycleInvalid(f"{source}: not valid YAML: {exc}", rule="yaml", file=source) from exc
    return LifecycleSpec.from_data(data, source=source)


def yaml_files(path: PathLike) -> list[Path]:
    """A file as itself, a directory as every ``*.yaml`` in it (sorted, not recursive)."""
    path = Path(path)
    if path.is_dir():
        return sorted(path.glob("*.yaml"))
    if path.is_file():
        return [path]
    raise ConfigurationError(f"lifecycle path {str(path)!r} does not exist", path=str(path))


def entry_point_files(group: str = ENTRY_POINT_GROUP) -> list[Path]:
    """Every lifecycle file that the entry points of ``group`` point to.

    An entry point may load to a callable (called without arguments), a path, or a list of
    paths; a directory stands for every ``*.yaml`` in it.
    """
    files: list[Path] = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        files.extend(_entry_point_files(ep))
    return files


def _entry_point_files(ep: EntryPoint) -> list[Path]:
    try:
        value: Any = ep.load()
        if callable(value):
            value = value()
    except Exception as exc:
        raise ConfigurationError(
            f"lifecycle entry point {ep.name!r} ({ep.value}) failed to load: {exc}", entry_point=ep.name
        ) from exc
    paths = [value] if isinstance(value, str | Path) else value
    if not isinstance(paths, Iterable) or not all(isinstance(p, str | Path) for p in paths):
        raise ConfigurationError(
            f"lifecycle entry point {ep.name!r} ({ep.value}) must give a path or a list of paths, "
            f"got {type(value).__name__}",
            entry_point=ep.name,
        )
    files: list[Path] = []
    for p in paths:
        files.extend(yaml_files(p))
    return files


class LifecycleRegistry:
    """Every known lifecycle by name, each checked, with one cached machine per lifecycle.

    A name defined by two different files is an error naming both: silently letting one win
    would make an instance's behaviour depend on plugin load order. The same file reached twice
    (an operator folder that is also a plugin's) is read once.
    """

    def __init__(self, files: Iterable[PathLike] = ()) -> None:
        self._specs: dict[str, LifecycleSpec] = {}
        self._files: dict[str, Path] = {}
        self._machines: dict[str, LifecycleMachine] = {}
        self._lock = threading.Lock()
        seen: set[Path] = set()
        for file in files:
            resolved = Path(file).resolve()
            if resolved in seen:
                continue
            seen.add(resolved)
            self.add(load_lifecycle_file(file), source=Path(file))

    @classmethod
    def discover(
        cls, extra_paths: Iterable[PathLike] = (), *, group: str = ENTRY_POINT_GROUP
    ) -> LifecycleRegistry:
        """Entry-point lifecycles first, then the operator's extra folders (or files)."""
        files = entry_point_files(group)
        for path in extra_paths:
            files.extend(yaml_files(path))
        return cls(files)

    def add(self, spec: LifecycleSpec, *, source: Path | None = None) -> None:
        """Register one checked lifecycle; a name already taken is a LifecycleInvalid."""
        if spec.name in self._specs:
            first = self._files.get(spec.name)
            where = f"{first or '<code>'} and {source or '<code>'}"
            raise LifecycleInvalid(
                f"lifecycle {spec.name!r} is defined twice: in {where}",
                rule="duplicate_lifecycle",
                lifecycle=spec.name,
                files=[str(first) if first else None, str(source) if source else None],
            )
        self._specs[spec.name] = spec
        if source is not None:
            self._files[spec.name] = source

    def names(self) -> list[str]:
        """The lifecycle names, sorted."""
        return sorted(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def get(self, name: str) -> LifecycleSpec:
        """The lifecycle called ``name``; UnknownLifecycle (404) listing the known ones if none."""
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownLifecycle(
                f"unknown lifecycle {name!r}; known: {', '.join(self.names()) or 'none'}",
                lifecycle=name,
                known=self.names(),
            ) from None

    def source(self, name: str) -> Path | None:
        """The file that defined ``name`` (None when it was added from code)."""
        self.get(name)
        return self._files.get(name)

    def machine(self, name: str) -> LifecycleMachine:
        """The lifecycle's machine, built once and shared (machines are thread-safe)."""
        machine = self._machines.get(name)
        if machine is None:
            with self._lock:
                machine = self._machines.get(name)
                if machine is None:
                    machine = self._machines[name] = LifecycleMachine(self.get(name))
        return machine
