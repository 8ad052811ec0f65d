"""Adoption: how a model says that a discovered resource becomes a service instance.

Why in the model: only the model knows which entity manages a resource type, and how the
discovered values map to that entity's attributes (the adopted instance must refine into a
resource equal to what is on the target, so that its first deploy changes nothing). Two ways
to declare it, as for handlers::

    @lsm.adopt("std::File", managed_file)          # managed_file: a Binding
    def file_to_instance(attributes, ref):
        return {"host": ref.agent, "path": attributes["path"], "content": attributes["content"]}

    ADOPTERS = {("std::File", "ManagedFile"): file_to_instance}    # (type, binding or entity name)

The function receives the discovered attributes (a dict, as stored) and, when it takes a
second parameter, the parsed id (``ResourceIdParts``: type, agent, attribute, value). It
returns the entity's attributes; the create path validates them like any create. Pure: no I/O.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lsm.catalog import Binding
from lsm.model.resource_id import ResourceIdParts

#: attribute set on adopter functions by ``@lsm.adopt``: ``((resource_type, entity), ...)``
ADOPTION_MARK = "__lsm_adopts__"

AdopterFunction = Callable[..., Mapping[str, Any]]


@dataclass(frozen=True)
class Adopter:
    """One declared adoption: ``resource_type`` resources become ``entity`` instances via ``fn``."""

    resource_type: str
    entity: str
    fn: AdopterFunction

    def attributes(self, discovered: Mapping[str, Any], ref: ResourceIdParts) -> dict[str, Any]:
        """The entity attributes for one discovered resource (the function's answer, as a dict)."""
        result = self.fn(dict(discovered), ref) if _arity(self.fn) >= 2 else self.fn(dict(discovered))
        if not isinstance(result, Mapping):
            raise TypeError(
                f"adopter {getattr(self.fn, '__name__', self.fn)!r} returned {type(result).__name__}, "
                "not a mapping of attributes"
            )
        return dict(result)


def _arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def entity_name(target: Binding | str) -> str:
    return target if isinstance(target, str) else target.name


def adopt(resource_type: str, target: Binding | str) -> Callable[[AdopterFunction], AdopterFunction]:
    """Declare in a model module how a discovered ``resource_type`` becomes a ``target`` instance."""
    if not isinstance(resource_type, str) or not resource_type:
        raise TypeError(f"@lsm.adopt: resource type must be a non-empty string, not {resource_type!r}")
    name = entity_name(target)

    def mark(fn: AdopterFunction) -> AdopterFunction:
        if not callable(fn):
            raise TypeError(f"@lsm.adopt({resource_type!r}, {name!r}) decorates {fn!r}, not a function")
        setattr(fn, ADOPTION_MARK, (*getattr(fn, ADOPTION_MARK, ()), (resource_type, name)))
        return fn

    return mark


def adopters_of(namespace: Mapping[str, Any]) -> dict[tuple[str, str], Adopter]:
    """``{(resource_type, entity): Adopter}`` of a model module: ``@lsm.adopt`` functions, then
    ``ADOPTERS`` (which wins a clash: it is the explicit table)."""
    found: dict[tuple[str, str], Adopter] = {}
    for value in namespace.values():
        if callable(value) and ADOPTION_MARK in getattr(value, "__dict__", {}):
            for resource_type, entity in getattr(value, ADOPTION_MARK):
                found[(resource_type, entity)] = Adopter(resource_type, entity, value)
    table = namespace.get("ADOPTERS") or {}
    if not isinstance(table, Mapping):
        raise TypeError("ADOPTERS must be a mapping {(resource_type, binding or entity name): function}")
    for key, fn in table.items():
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str) and callable(fn)):
            raise TypeError(
                f"ADOPTERS key {key!r}: expected (resource_type, binding or entity name) -> function"
            )
        entity = entity_name(key[1])
        found[(key[0], entity)] = Adopter(key[0], entity, fn)
    return found


__all__ = ["ADOPTION_MARK", "Adopter", "adopt", "adopters_of"]
