"""Finding selectors by name: the ``lsm.selectors`` entry points plus the model's ``SELECTORS``.

Why entry points: the bundled selectors (``lsm_selectors``) and third-party ones are found the
same way, so the core never imports them (docs/architecture.md §3). A package
registers a selector class with::

    [project.entry-points."lsm.selectors"]
    same_site = "my_package.selectors:SameSiteSelector"

and a model module may declare its own, without packaging anything::

    SELECTORS = {"same_site": SameSiteSelector}

The environment setting ``selector`` (default ``owner_tree``) names the one a partial compile
uses. **On a name clash the model wins**: the model is the environment's own, most specific
code, so it may replace an installed selector (say, a patched ``owner_tree``) without anyone
uninstalling a package; entry points are shared by every environment of the process.

``selector_for`` loads only the entry point it needs, so one broken plugin does not stop the
compiles of environments that do not use it; ``available_selectors`` loads them all (catalog
listings, checks). A value that is not a ``BaseSelector`` subclass, or an entry point that fails
to import, is a ``ConfigurationError`` naming it.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol

from lsm.catalog import Catalog
from lsm.errors import ConfigurationError, LsmError, SelectorError, UnknownSelector
from lsm.selection.factories import REGISTERED
from lsm.selection.selector import BaseSelector
from lsm.selection.view import InventoryView
from lsm.store.transient import is_transient

ENTRY_POINT_GROUP = "lsm.selectors"
DEFAULT_SELECTOR = "owner_tree"


class HasSelectors(Protocol):
    """What a model offers: ``lsm.model.Model`` (its ``selectors`` come from ``SELECTORS``)."""

    @property
    def selectors(self) -> Mapping[str, Any]: ...


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    """Installed selectors, read once per process: scanning every distribution's metadata
    on each lookup was a large share of a one-instance partial compile."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)  # the first distribution on sys.path wins, like imports
    return found


def _checked(name: str, value: Any, origin: str) -> type[BaseSelector]:
    if not (isinstance(value, type) and issubclass(value, BaseSelector)):
        raise ConfigurationError(
            f"selector {name!r} from {origin} is {value!r}, not a subclass of lsm.selection.Selector "
            "or lsm.selection.PhasedSelector",
            selector=name,
        )
    return value


def _load(ep: EntryPoint) -> type[BaseSelector]:
    origin = f"entry point {ep.value!r}"
    try:
        value = ep.load()
    except Exception as exc:
        raise ConfigurationError(
            f"selector {ep.name!r}: {origin} can not be loaded: {type(exc).__name__}: {exc}", selector=ep.name
        ) from exc
    return _checked(ep.name, value, origin)


def _model_selectors(model: HasSelectors | None) -> Mapping[str, Any]:
    """The model's ``SELECTORS`` over the factories registered at run time (the model wins)."""
    return {**REGISTERED, **({} if model is None else model.selectors)}


def selector_names(model: HasSelectors | None = None) -> list[str]:
    """Every selector name known to this environment, without importing any plugin."""
    return sorted(set(_entry_points()) | set(_model_selectors(model)))


def available_selectors(model: HasSelectors | None = None) -> dict[str, type[BaseSelector]]:
    """``{name: selector class}`` from the entry points and the model (the model wins a clash)."""
    found = {name: _load(ep) for name, ep in _entry_points().items()}
    for name, value in _model_selectors(model).items():
        found[name] = _checked(name, value, "the model's SELECTORS")
    return dict(sorted(found.items()))


def selector_for(name: str, model: HasSelectors | None = None) -> type[BaseSelector]:
    """The selector class registered as ``name``; ``UnknownSelector`` lists the known names."""
    model_selectors = _model_selectors(model)
    if name in model_selectors:
        return _checked(name, model_selectors[name], "the model's SELECTORS")
    ep = _entry_points().get(name)
    if ep is None:
        known = selector_names(model)
        raise UnknownSelector(
            f"unknown selector {name!r}; known: {', '.join(known) or 'none'}", selector=name, known=known
        )
    return _load(ep)


def build_selector(
    name: str,
    view: InventoryView,
    catalog: Catalog,
    *,
    model: HasSelectors | None = None,
    **params: Any,
) -> BaseSelector:
    """Look ``name`` up and construct it for one compile, with its parameters (if it takes any).

    A constructor that rejects the parameters is a ``SelectorError`` (like a failing selector);
    engine errors it raises on purpose (``UnknownEntity`` for a bad entity name) pass through.
    """
    cls = selector_for(name, model)
    try:
        return cls(view, catalog, **params)
    except LsmError:
        raise
    except Exception as exc:
        if is_transient(exc):
            raise  # a constructor that read the inventory met a lost connection: not the selector
        raise SelectorError(
            f"selector {name!r} can not be built with {sorted(params)}: {type(exc).__name__}: {exc}",
            selector=name,
            traceback=traceback.format_exc(),
        ) from exc


__all__ = [
    "DEFAULT_SELECTOR",
    "ENTRY_POINT_GROUP",
    "HasSelectors",
    "available_selectors",
    "build_selector",
    "selector_for",
    "selector_names",
]
