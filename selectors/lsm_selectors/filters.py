"""Filter selectors: whole trees of every instance of some entities, in some states, or with a value.

Why: batch compile triggers (CI jobs, schedulers) recompile "every port", "everything failed",
"every port of VLAN 10" without knowing ids. Each selector here finds the matching live
instances, then selects their whole ownership trees (a resource set is per tree, so half a tree
can not be compiled). They ignore the requested ids: compose with the environment's selector
to compile those too. Parameters are keyword arguments after the view and the catalog::

    from lsm.selection import build_selector

    selector = build_selector("state", view, catalog, states=["failed"]) | build_selector(
        "owner_tree", view, catalog
    )

Matching reads whole entities through the (entity, state) index: the cost grows with the number
of instances of the named entities, which is what such a trigger asks for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lsm.catalog import Catalog
from lsm.errors import InvalidInput
from lsm.selection import InventoryView, OwnerTreeSelector, SelectionResult, Selector


def _names(values: str | Iterable[str]) -> list[str]:
    return [values] if isinstance(values, str) else list(values)


class TreeFilterSelector(Selector):
    """Base of the filters: ``matching()`` ids, expanded to their whole ownership trees.

    A filter's picks are ``custom`` in a compile report, never ``relation``: it chose them by
    what they are, not by what they are related to."""

    follows_relations = False

    def __init__(self, view: InventoryView, catalog: Catalog) -> None:
        super().__init__(view, catalog)
        self._trees = OwnerTreeSelector(view, catalog)

    def matching(self) -> Iterable[str]:
        """Ids of the live instances this filter matches."""
        raise NotImplementedError

    def select_all(self, instance_ids: Sequence[str]) -> Mapping[str, Iterable[str]]:
        self._trees.register(sorted(set(self.matching())))
        return {binding.name: self._trees.select(binding) for binding in self.catalog}

    def compute_roots(self, requested_ids: Sequence[str], selected: SelectionResult) -> Iterable[str]:
        return self._trees.compute_roots(requested_ids, selected)


class EntitySelector(TreeFilterSelector):
    """Every live instance of the given entities, with their trees (entry point ``entity``)."""

    name = "entity"

    def __init__(self, view: InventoryView, catalog: Catalog, *, entities: str | Iterable[str]) -> None:
        super().__init__(view, catalog)
        self.entities = [catalog.get(name).name for name in _names(entities)]  # UnknownEntity early

    def matching(self) -> Iterable[str]:
        return [r.id for name in self.entities for r in self.view.instances_of(name)]


class StateSelector(TreeFilterSelector):
    """Every live instance in one of ``states`` (of ``entities``, default all), with their trees.

    Entry point ``state``.
    """

    name = "state"

    def __init__(
        self,
        view: InventoryView,
        catalog: Catalog,
        *,
        states: str | Iterable[str],
        entities: str | Iterable[str] | None = None,
    ) -> None:
        super().__init__(view, catalog)
        self.states = sorted(set(_names(states)))
        names = catalog.names() if entities is None else _names(entities)
        self.entities = [catalog.get(name).name for name in names]

    def matching(self) -> Iterable[str]:
        return [r.id for name in self.entities for r in self.view.instances_of(name, states=self.states)]


class AttributeSelector(TreeFilterSelector):
    """Every live instance of ``entity`` whose ``attribute`` equals ``value``, with their trees.

    The attribute is read from the set the compile uses for each instance (the view's
    ``attribute_set`` chooser); equality is on the JSON value (``10`` is not ``"10"``).
    Entry point ``attribute``.
    """

    name = "attribute"

    def __init__(
        self, view: InventoryView, catalog: Catalog, *, entity: str, attribute: str, value: Any
    ) -> None:
        super().__init__(view, catalog)
        binding = catalog.get(entity)
        if attribute not in binding.entity.attributes():
            raise InvalidInput(
                f"{binding.name} has no attribute {attribute!r}", entity=binding.name, attribute=attribute
            )
        self.entity, self.attribute, self.value = binding.name, attribute, value

    def matching(self) -> Iterable[str]:
        missing = object()
        return [
            r.id
            for r in self.view.instances_of(self.entity)
            if self.view.attribute(r.id, self.attribute, missing) == self.value
        ]


__all__ = ["AttributeSelector", "EntitySelector", "StateSelector", "TreeFilterSelector"]
