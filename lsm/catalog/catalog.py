"""``Catalog``: the bindings of one model, checked together, indexed for lookups.

Why: every layer above asks the same questions (which binding has this API name, which
bindings does this one own, which entity does this reference point to) and the answers must
come from one checked place. Building a catalog checks every rule that spans bindings:
unique API names, identity attributes, owner relations, reference targets.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

from lsm.catalog.binding import Binding
from lsm.catalog.entity import AttributeInfo, ServiceEntity
from lsm.catalog.modifiers import Modifier
from lsm.errors import ConfigurationError, UnknownEntity


class Catalog:
    """The checked, indexed set of bindings of an environment's model."""

    def __init__(self, bindings: Iterable[Binding]) -> None:
        self._by_name: dict[str, Binding] = {}
        for binding in bindings:
            if binding.name in self._by_name and self._by_name[binding.name] is not binding:
                raise ConfigurationError(
                    f"two bindings use the API name {binding.name!r}", entity=binding.name
                )
            self._by_name[binding.name] = binding
        self._by_entity: dict[type[ServiceEntity], Binding] = {}
        self._by_class_name: dict[str, Binding] = {}
        for binding in self._by_name.values():
            self._by_entity.setdefault(binding.entity, binding)
            self._by_class_name.setdefault(binding.entity.__name__, binding)
        self._children: dict[str, list[Binding]] = {name: [] for name in self._by_name}
        for binding in self._by_name.values():
            self._check(binding)
            if binding.owner is not None:
                self._children[binding.owner.name].append(binding)

    # -- lookups -------------------------------------------------------------------------
    def __iter__(self) -> typing.Iterator[Binding]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def get(self, name: str) -> Binding:
        try:
            return self._by_name[name]
        except KeyError:
            raise UnknownEntity(
                f"unknown service entity {name!r}; known: {', '.join(self.names()) or 'none'}", entity=name
            ) from None

    def binding_for(self, entity: type[ServiceEntity] | str) -> Binding:
        """The binding of an entity class, or of a class name / API name (reference targets)."""
        if isinstance(entity, str):
            found = self._by_name.get(entity) or self._by_class_name.get(entity)
        else:
            found = self._by_entity.get(entity) or self._by_class_name.get(entity.__name__)
        if found is None:
            name = entity if isinstance(entity, str) else entity.__name__
            raise UnknownEntity(f"no binding for entity {name!r}", entity=name)
        return found

    def children(self, name: str) -> list[Binding]:
        """Bindings whose ``owner`` is ``name``."""
        return list(self._children[self.get(name).name])

    def relations(self, name: str) -> dict[str, tuple[AttributeInfo, Binding]]:
        """Relation attributes of a binding's entity with the binding each points to."""
        entity = self.get(name).entity
        return {
            attr: (info, self.binding_for(info.reference.target))
            for attr, info in entity.relations().items()
            if info.reference is not None
        }

    def describe(self, name: str) -> dict[str, Any]:
        binding = self.get(name)
        out = binding.describe()
        out["relations"] = [
            {"attribute": attr, "target": target.name, "many": info.many}
            for attr, (info, target) in self.relations(name).items()
        ]
        return out

    def json_schema(self, name: str) -> dict[str, Any]:
        binding = self.get(name)
        schema = binding.entity.model_json_schema()
        for attr, info in binding.entity.attributes().items():
            prop = schema.get("properties", {}).get(attr)
            if prop is not None:
                prop["x-lsm-modifier"] = info.modifier.value
                if info.reference is not None:
                    prop["x-lsm-relation"] = self.binding_for(info.reference.target).name
        schema["x-lsm-entity"] = binding.name
        schema["x-lsm-lifecycle"] = binding.lifecycle
        return schema

    # -- checks ----------------------------------------------------------------------------
    def _check(self, binding: Binding) -> None:
        attributes = binding.entity.attributes()
        for info in attributes.values():
            if info.modifier is Modifier.R and info.required:
                raise ConfigurationError(
                    f"{binding.name}.{info.name} is an 'r' attribute (set by the server) and needs a default",
                    entity=binding.name,
                    attribute=info.name,
                )
            if info.reference is not None:
                self.binding_for(info.reference.target)  # raises when the target is unknown
        if binding.identity is not None:
            ident = attributes.get(binding.identity)
            if ident is None:
                raise ConfigurationError(
                    f"identity {binding.identity!r} is not an attribute of {binding.name}",
                    entity=binding.name,
                )
            base = binding.entity.model_fields[binding.identity].annotation
            if ident.modifier is not Modifier.RW or not ident.required or base not in (str, int):
                raise ConfigurationError(
                    f"identity {binding.name}.{binding.identity} must be a required 'rw' str or int "
                    "attribute",
                    entity=binding.name,
                    attribute=binding.identity,
                )
        unknown = [name for name in binding.summary if name not in attributes]
        if unknown:
            raise ConfigurationError(
                f"{binding.name}: summary names {unknown}, not attributes of {binding.entity.__name__}",
                entity=binding.name,
                attribute=unknown[0],
            )
        if (binding.owner is None) != (binding.relation_to_owner is None):
            raise ConfigurationError(
                f"{binding.name}: 'owner' and 'relation_to_owner' go together", entity=binding.name
            )
        if binding.owner is not None and binding.relation_to_owner is not None:
            if binding.owner.name not in self._by_name:
                raise ConfigurationError(
                    f"{binding.name}: owner {binding.owner.name!r} is not in the catalog", entity=binding.name
                )
            rel = attributes.get(binding.relation_to_owner)
            if rel is None or rel.reference is None or rel.many:
                raise ConfigurationError(
                    f"{binding.name}.{binding.relation_to_owner} must be a single reference to "
                    f"{binding.owner.name}",
                    entity=binding.name,
                    attribute=binding.relation_to_owner,
                )
            if self.binding_for(rel.reference.target) is not binding.owner:
                raise ConfigurationError(
                    f"{binding.name}.{binding.relation_to_owner} points to "
                    f"{rel.reference.target_name}, not to the owner {binding.owner.name}",
                    entity=binding.name,
                    attribute=binding.relation_to_owner,
                )
            if rel.modifier is not Modifier.RW or not rel.required:
                raise ConfigurationError(
                    f"{binding.name}.{binding.relation_to_owner} is the relation to the owner: "
                    "it must be a required 'rw' attribute (an owner never changes)",
                    entity=binding.name,
                    attribute=binding.relation_to_owner,
                )
