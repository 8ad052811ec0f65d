"""Selector specs: which selector(s) a setting or a compile request names, with parameters.

Why: the environment setting ``selector`` and a compile request's ``selector`` are data (JSON),
and three shapes are useful:

* ``"owner_tree"``: a registered name (entry point, the model's ``SELECTORS``, or an LSM
  factory registered with ``lsm.selection.lsm_compat.global_cache.set_selector_factory``);
* ``{"name": "state", "params": {"states": ["failed"]}}``: a name with keyword parameters;
* ``["owner_tree", {"name": "relation_closure"}]``: the union of several (``UnionSelector``).

``check_spec`` proves a spec buildable before it is stored (a 422 naming the selector, never a
setting that makes every later compile fail): every name must be known to the environment,
and every selector must accept its parameters, which is tried by building it over a view of
the environment (constructors check their values, e.g. entity names). ``build_spec`` builds
it for one compile. The shape itself is checked lower down (``lsm.store.environments.settings``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from lsm.catalog import Catalog
from lsm.errors import InvalidInput, LsmError
from lsm.selection.plugins import HasSelectors, build_selector, selector_for
from lsm.selection.selector import BaseSelector, UnionSelector
from lsm.selection.view import InventoryView
from lsm.store.environments.settings import SelectorSpec, selector_parts


def build_spec(
    spec: SelectorSpec, view: InventoryView, catalog: Catalog, *, model: HasSelectors | None = None
) -> BaseSelector:
    """The selector ``spec`` names, built for one compile (a union for a list)."""
    parts = [
        build_selector(name, view, catalog, model=model, **params) for name, params in selector_parts(spec)
    ]
    return parts[0] if len(parts) == 1 else UnionSelector(*parts)


def check_spec(
    spec: SelectorSpec,
    view: InventoryView,
    catalog: Catalog,
    *,
    model: HasSelectors | None = None,
    error: Callable[..., InvalidInput] = InvalidInput,
) -> None:
    """Raise ``error`` (an ``InvalidInput``, 422) naming the selector unless ``spec`` builds."""
    for name, params in selector_parts(spec):
        try:
            cls = selector_for(name, model)
            _check_parameters(name, cls, params)
            build_selector(name, view, catalog, model=model, **params)
        except LsmError as exc:
            raise error(f"selector {name!r}: {exc.message}", selector=name, params=params) from None


def _check_parameters(name: str, cls: type[BaseSelector], params: dict[str, Any]) -> None:
    """Missing or unknown keyword parameters, named, before anything is built."""
    try:
        inspect.signature(cls).bind(None, None, **params)
    except TypeError as exc:
        raise InvalidInput(f"parameters {sorted(params)} do not fit: {exc}", selector=name) from None


def parameters_of(cls: type[BaseSelector]) -> dict[str, dict[str, Any]]:
    """The keyword parameters a selector class takes (for ``lsm selector list``)."""
    out: dict[str, dict[str, Any]] = {}
    for position, parameter in enumerate(inspect.signature(cls).parameters.values()):
        if position < 2 or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue  # the view and the catalog
        annotation = parameter.annotation
        out[parameter.name] = {
            "required": parameter.default is parameter.empty,
            "default": None if parameter.default is parameter.empty else parameter.default,
            "type": annotation
            if isinstance(annotation, str)
            else getattr(annotation, "__name__", str(annotation)),
        }
    return out


__all__ = ["build_spec", "check_spec", "parameters_of"]


def validate_spec(
    db: Any,
    env_id: str,
    catalog: Catalog,
    spec: Any,
    *,
    model: HasSelectors | None = None,
    error: type[InvalidInput] = InvalidInput,
) -> None:
    """Refuse (``error``, a 422 naming it) a selector spec this environment can not build: a
    malformed spec, an unknown name, missing or unknown parameters, values the selector refuses."""
    try:
        selector_parts(spec)
    except InvalidInput as exc:
        raise error(exc.message, **exc.details) from None
    with db.read() as session:
        check_spec(spec, InventoryView(session, env_id, catalog), catalog, model=model, error=error)
