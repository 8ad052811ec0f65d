"""The adapter itself: ``AbstractSelector`` over ``BaseSelector``, ``global_cache`` over the view.

``global_cache`` is a module-level object, as in Inmanta LSM, but it holds nothing: while a
compat selector runs, a context variable points it at that compile's ``InventoryView``, so two
compiles in two threads each see their own snapshot, and nothing outlives a compile.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from lsm.catalog import Binding, Catalog
from lsm.errors import SelectorError
from lsm.selection.factories import REGISTERED
from lsm.selection.owner_tree import OwnerTreeSelector
from lsm.selection.selector import BaseSelector, selector_name
from lsm.selection.view import InstanceRecord, InventoryView

_VIEW: contextvars.ContextVar[InventoryView | None] = contextvars.ContextVar("lsm_compat_view", default=None)


def instance_dict(record: InstanceRecord) -> dict[str, Any]:
    """An instance as Inmanta LSM hands it to selectors (its field names)."""
    return {
        "id": record.id,
        "environment": record.env_id,
        "service_entity": record.entity,
        "version": record.version,
        "desired_state_version": record.desired_state_version,
        "state": record.state,
        "candidate_attributes": record.candidate_attributes,
        "active_attributes": record.active_attributes,
        "rollback_attributes": record.rollback_attributes,
        "config": record.config,
        "service_identity_attribute_value": record.identity,
        "deleted": record.deleted,
        "created_at": record.created_at.isoformat(),
        "last_updated": record.last_updated.isoformat(),
    }


class GlobalCache:
    """``inmanta_plugins.lsm.global_cache``: inventory lookups for the selector that is running."""

    def _view(self, env: Any) -> InventoryView:
        view = _VIEW.get()
        if view is None:
            raise SelectorError("lsm_compat.global_cache is only available while a selector runs")
        if env is not None and str(env) != view.env_id:
            raise SelectorError(f"this compile is for environment {view.env_id}, not {env}", env_id=str(env))
        return view

    def get_instance(
        self,
        env: Any,
        service_entity_name: str | None,
        instance_id: Any,
        include_terminated: bool = False,
    ) -> dict[str, Any] | None:
        """The instance, or ``None`` (unknown, of another entity, or terminated unless asked for)."""
        record = self._view(env).get(str(instance_id), include_terminated=include_terminated)
        if record is None or (service_entity_name is not None and record.entity != service_entity_name):
            return None
        return instance_dict(record)

    def get_all_instances(self, env: Any, service_entity_name: str) -> list[dict[str, Any]]:
        """Every live instance of the entity (reads the whole entity: use it for filters only)."""
        return [instance_dict(r) for r in self._view(env).instances_of(service_entity_name)]

    def get_binding(self, env: Any, service_entity_name: str) -> Binding:
        """The binding of the entity (``UnknownEntity`` when the model has none)."""
        return self._view(env).catalog.get(service_entity_name)

    def get_lifecycle(self, env: Any, service_entity_name: str) -> str:
        """The name of the entity's lifecycle (the lifecycle itself is not a selector's concern)."""
        return self.get_binding(env, service_entity_name).lifecycle

    def set_selector_factory(self, factory: type[BaseSelector], name: str | None = None) -> None:
        """Register a selector class under ``name`` (default: its ``name``, else its class name)."""
        if not (isinstance(factory, type) and issubclass(factory, BaseSelector)):
            raise TypeError(f"{factory!r} is not a selector class")
        REGISTERED[name or selector_name(factory)] = factory


global_cache = GlobalCache()


@contextmanager
def _running(view: InventoryView) -> Iterator[None]:
    token = _VIEW.set(view)
    try:
        yield
    finally:
        _VIEW.reset(token)


class AbstractSelector(BaseSelector):
    """``inmanta_plugins.lsm.partial.AbstractSelector``: override ``select_all`` (or ``select``).

    The phases run in LSM's order: ``reload_bindings()``, ``register_instances(ids)``, then
    ``select(name)`` for every entity of the model; the default ``select`` answers from one call
    of ``select_all()``. Answers are lists of instance dicts (or ids); ``None`` entries and
    terminated instances are dropped (they produce nothing).
    """

    def __init__(self, view: InventoryView, catalog: Catalog) -> None:
        super().__init__(view, catalog)
        self.env: str = view.env_id
        self.requested_instances: list[str] = []
        self._selected: dict[str, list[dict[str, Any]]] | None = None

    def reload_bindings(self) -> None:
        """Phase 1: look at the bindings (``self.catalog``); nothing to do by default."""

    def register_instances(self, requested_instances: Sequence[Any]) -> None:
        """Phase 2: remember the requested instance ids."""
        self.requested_instances = [str(i) for i in requested_instances]
        self._selected = None

    def select(self, requested_service_type: str) -> list[dict[str, Any]]:
        """Phase 3, per entity: the instances ``lsm.all`` returns for it."""
        if self._selected is None:
            self._selected = dict(self.select_all())
        return list(self._selected.get(requested_service_type, []) or [])

    def select_all(self) -> Mapping[str, list[dict[str, Any]]]:
        """The one-method form: ``{entity name: [instance dicts]}``."""
        raise NotImplementedError(f"{selector_name(self)} must override select_all() or select()")

    def _get_attribute(self, instance: Mapping[str, Any], attribute: str) -> Any:
        """An attribute from the set this compile uses for the instance (else the newest one it has)."""
        chosen = self.view.attribute_set_name(str(instance["id"]))
        names = [chosen] if chosen is not None else []
        for name in (*names, "active", "candidate", "rollback"):
            values = instance.get(f"{name}_attributes")
            if values is not None:
                return values.get(attribute)
        return None

    def _run_phases(self, requested_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        with _running(self.view):
            self.reload_bindings()
            self.register_instances(requested_ids)
            answer = {binding.name: self.select(binding.name) for binding in self.catalog}
        return {name: self._live_ids(items) for name, items in answer.items()}

    def _live_ids(self, items: Iterable[Any]) -> list[str]:
        ids = [str(item["id"] if isinstance(item, Mapping) else item) for item in items if item is not None]
        found = self.view.get_many(ids, include_terminated=True)
        # terminated: dropped; unknown: kept, so that run_selector names them in its error
        return [i for i in ids if i not in found or not found[i].deleted]


class TreeSelector(AbstractSelector):
    """``inmanta_plugins.lsm.partial.TreeSelector``: the ownership trees of the requested instances."""

    def select_all(self) -> dict[str, list[dict[str, Any]]]:
        trees = OwnerTreeSelector(self.view, self.catalog)
        trees.register(self.requested_instances)
        records = self.view.get_many(i for b in self.catalog for i in trees.select(b))
        out: dict[str, list[dict[str, Any]]] = {binding.name: [] for binding in self.catalog}
        for record in records.values():
            out[record.entity].append(instance_dict(record))
        return out


__all__ = ["AbstractSelector", "GlobalCache", "TreeSelector", "global_cache", "instance_dict"]
