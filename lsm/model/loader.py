"""Loading a model: a Python file, a package directory, or an importable module path.

Why: operators name a model on the command line (``lsm server --model``) or in ``lsm.toml``
and the engine must turn that into bindings, implementations and selectors without the model
author registering anything globally (several environments may load several models in one
process). A model module either defines ``model = lsm.Model(...)`` explicitly, or the loader
collects what the module namespace holds: ``Binding`` objects, functions decorated with
``@lsm.implementation`` and an optional ``SELECTORS`` mapping of name -> selector class (and
``@lsm.handler`` / ``HANDLERS``, ``@lsm.adopt`` / ``ADOPTERS``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

from lsm.catalog import Binding, Catalog
from lsm.errors import ConfigurationError
from lsm.model.adoption import Adopter, adopters_of

#: attribute set on implementation functions by ``@lsm.implementation(binding)``
IMPLEMENTATION_MARK = "__lsm_binding__"
#: attribute set on handler classes by ``@lsm.handler(resource_type)``: the types they handle
HANDLER_MARK = "__lsm_handles__"


@dataclass
class Model:
    """What a model gives the engine: bindings, their implementations, and selectors."""

    bindings: list[Binding]
    implementations: dict[str, list[Callable[..., Any]]] = field(default_factory=dict)
    selectors: dict[str, Any] = field(default_factory=dict)
    #: resource type -> handler class, from ``@lsm.handler`` classes and ``HANDLERS``
    handlers: dict[str, Any] = field(default_factory=dict)
    #: (discovered resource type, entity) -> how such a resource becomes an instance
    #: (``@lsm.adopt`` functions and ``ADOPTERS``; see ``lsm.model.adoption``)
    adopters: dict[tuple[str, str], Adopter] = field(default_factory=dict)
    source: str = ""
    #: the model's source files and their (mtime, size) when it was loaded: see ``source_changed``
    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: a hash of the model's source files as loaded (``source_fingerprint``); ``None`` when the
    #: model was not loaded from files (then no full compile may skip a tree: see
    #: ``lsm.compiler.incremental``)
    fingerprint: str | None = None

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.bindings)

    def implementations_for(self, binding: Binding | str) -> list[Callable[..., Any]]:
        name = binding if isinstance(binding, str) else binding.name
        return self.implementations.get(name, [])


_cache: dict[str, Model] = {}
_lock = threading.Lock()


def load_model(spec: str | Path, *, reload: bool = False) -> Model:
    """Load (once per process) the model named by a file path, a directory or a module path.

    ``reload``: import it afresh (its source changed); the previous ``Model`` object stays valid
    for whoever still holds it (a compile running meanwhile).
    """
    key = str(spec)
    with _lock:
        if reload or key not in _cache:
            if reload:
                _forget(key)
            module = _import(key)
            model = model_from_module(module, source=key)
            model.files = _stat(_files_of(module))
            if model.fingerprint is None:
                model.fingerprint = source_fingerprint(module)
            _cache[key] = model
        return _cache[key]


def fresh_import(spec: str) -> ModuleType:
    """Import the module named by ``spec`` (a file, a package directory or a module path) anew,
    whatever an earlier import left in ``sys.modules``: its top level runs again.

    For ``lsm export`` (``lsm.model.resource_set``), whose models declare their resources while
    their top level runs. A model loaded by ``load_model`` keeps its cached ``Model``.
    """
    with _lock:
        _forget(spec, keep_cached=True)
        return _import(spec)


def loadable(model: Model) -> bool:
    """Whether ``load_model(model.source)`` in another process gives this model: it was loaded
    from its source, not built in code (a process that runs compiles loads models by source)."""
    with _lock:
        cached = _cache.get(model.source) if model.source else None
    return cached is not None and (
        cached is model or (model.fingerprint is not None and cached.fingerprint == model.fingerprint)
    )


def source_changed(model: Model) -> bool:
    """Whether a source file of ``model`` was edited, added or removed since it was loaded (stat
    calls only: cheap enough to ask every few seconds)."""
    if not model.files:
        return False
    return load_model_files(model) != model.files


def load_model_files(model: Model) -> dict[str, tuple[int, int]]:
    """The current state of ``model``'s files (to stop asking about an edit that failed to load)."""
    packages = [Path(f).parent for f in model.files if Path(f).name == "__init__.py"]
    top = min(packages, key=lambda p: len(p.parts), default=None)
    added = [str(p) for p in top.rglob("*.py")] if top is not None else []
    return _stat(added + list(model.files))


def _files_of(module: ModuleType) -> list[str]:
    """The source files a model module consists of: its own file, and every module of its package."""
    file = getattr(module, "__file__", None)
    if not file:
        return []
    path = Path(file)
    if path.name == "__init__.py":
        return sorted(str(p) for p in path.parent.rglob("*.py"))
    return [str(path)]


def _stat(files: list[str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for name in sorted(set(files)):
        try:
            info = Path(name).stat()
        except OSError:
            continue
        out[name] = (info.st_mtime_ns, info.st_size)
    return out


def _forget(spec: str, *, keep_cached: bool = False) -> None:
    """Drop a model's modules from ``sys.modules`` so that the next import reads the files again
    (and its cached ``Model``, unless ``keep_cached``)."""
    old = _cache.get(spec) if keep_cached else _cache.pop(spec, None)
    names: set[str] = set()
    path = Path(spec)
    if path.exists():
        origin = path.resolve()
        digest = hashlib.blake2b(str(origin).encode(), digest_size=6).hexdigest()
        names = {n for n in sys.modules if n.startswith("lsm_model_") and n.split(".")[0].endswith(digest)}
    elif old is not None or spec in sys.modules:
        names = {n for n in sys.modules if n == spec or n.startswith(spec + ".")}
    for name in names:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def source_fingerprint(module: ModuleType) -> str | None:
    """A hash of the module's source: its file, or every ``.py`` file under a package directory
    (the files ``_files_of`` lists).

    Read at load, so it describes the code this process runs (an edit on disk after loading is
    not running yet). Files the model imports from elsewhere are not covered: an operator who
    changes those asks for a complete full compile. ``None`` for a module without files.
    """
    files = [Path(f) for f in _files_of(module)]
    if not files:
        return None
    root = files[0].parent if len(files) == 1 else Path(str(module.__file__)).parent
    digest = hashlib.blake2b(digest_size=16)
    for path in files:
        try:
            content = path.read_bytes()
        except OSError:
            return None
        digest.update(f"{path.relative_to(root)}\0{len(content)}\0".encode())
        digest.update(content)
    return digest.hexdigest()


def model_from_module(module: ModuleType, *, source: str = "") -> Model:
    explicit = getattr(module, "model", None)
    if isinstance(explicit, Model):
        if not explicit.source:
            explicit.source = source or module.__name__
        return explicit
    bindings: list[Binding] = []
    implementations: dict[str, list[Callable[..., Any]]] = {}
    handlers: dict[str, Any] = {}
    for value in vars(module).values():
        if isinstance(value, type) and HANDLER_MARK in vars(value):
            for resource_type in getattr(value, HANDLER_MARK):
                handlers[resource_type] = value
        if isinstance(value, Binding) and value not in bindings:
            bindings.append(value)
        elif callable(value) and hasattr(value, IMPLEMENTATION_MARK):
            for binding in getattr(value, IMPLEMENTATION_MARK):
                implementations.setdefault(binding.name, []).append(value)
    if not bindings:
        raise ConfigurationError(f"model {source or module.__name__!r} defines no lsm.Binding", model=source)
    selectors = dict(getattr(module, "SELECTORS", {}) or {})
    handlers.update(getattr(module, "HANDLERS", {}) or {})
    try:
        adopters = adopters_of(vars(module))
    except TypeError as exc:
        raise ConfigurationError(f"model {source or module.__name__!r}: {exc}", model=source) from None
    return Model(
        bindings=bindings,
        implementations=implementations,
        selectors=selectors,
        handlers=handlers,
        adopters=adopters,
        source=source,
    )


def _import(spec: str) -> ModuleType:
    path = Path(spec)
    try:
        if path.suffix == ".py" and path.is_file():
            return _import_file(path.resolve(), path.resolve())
        if path.is_dir() and (path / "__init__.py").is_file():
            return _import_file(path.resolve() / "__init__.py", path.resolve(), package=True)
        if path.exists() or "/" in spec or spec.endswith(".py"):
            raise ConfigurationError(f"model {spec!r}: not a Python file or package directory", model=spec)
        return importlib.import_module(spec)
    except ConfigurationError:
        raise
    except ImportError as exc:
        raise ConfigurationError(f"model {spec!r} can not be imported: {exc}", model=spec) from exc
    except Exception as exc:
        raise ConfigurationError(
            f"model {spec!r} failed while loading: {type(exc).__name__}: {exc}", model=spec
        ) from exc


def _import_file(file: Path, origin: Path, *, package: bool = False) -> ModuleType:
    digest = hashlib.blake2b(str(origin).encode(), digest_size=6).hexdigest()
    name = f"lsm_model_{origin.stem if not package else origin.name}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, file, submodule_search_locations=[str(origin)] if package else None
    )
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"model {str(origin)!r} can not be loaded", model=str(origin))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
