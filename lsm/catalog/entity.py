"""``ServiceEntity``: the typed schema of a service, and what the catalog knows of each attribute.

A service entity is a pydantic model. The catalog reads, per attribute, its modifier (from
``Annotated``), whether it is required, its default, its description and whether it is an
inter-service relation; ``attributes()`` computes that once per class.

    class Router(lsm.ServiceEntity):
        \"\"\"A router managed through its management address.\"\"\"
        mgmt_ip: str
        name: Annotated[str, lsm.rw_plus] = "router"
        asn: Annotated[int | None, lsm.r] = None   # allocated by the server
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from lsm.catalog.modifiers import Modifier
from lsm.catalog.references import Reference


@dataclass(frozen=True)
class AttributeInfo:
    """What the catalog knows of one attribute of an entity."""

    name: str
    modifier: Modifier
    required: bool
    default: Any
    description: str
    type_name: str
    reference: Reference | None = None
    many: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type_name,
            "modifier": self.modifier.value,
            "required": self.required,
            "default": self.default,
            "description": self.description,
            "relation": None
            if self.reference is None
            else {"target": self.reference.target_name, "many": self.many},
        }


class ServiceEntity(BaseModel):
    """Base class of every service entity: unknown attributes are refused, values are validated."""

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)

    @classmethod
    def attributes(cls) -> dict[str, AttributeInfo]:
        """Every attribute with its modifier and relation, computed once per class."""
        cached = cls.__dict__.get("_lsm_attributes_cache")
        if cached is None:
            cached = {name: _attribute_info(name, field) for name, field in cls.model_fields.items()}
            cls._lsm_attributes_cache = cached  # type: ignore[attr-defined]  # a per-class cache, not a model field
        return typing.cast(dict[str, AttributeInfo], cached)

    @classmethod
    def entity_description(cls) -> str:
        return (cls.__doc__ or "").strip()

    @classmethod
    def relations(cls) -> dict[str, AttributeInfo]:
        return {name: info for name, info in cls.attributes().items() if info.reference is not None}


def _attribute_info(name: str, field: FieldInfo) -> AttributeInfo:
    modifier = Modifier.RW
    reference: Reference | None = None
    many = False
    for meta in field.metadata:
        if isinstance(meta, Modifier):
            modifier = meta
        elif isinstance(meta, Reference):
            reference = meta
    annotation = field.annotation
    if reference is None:
        reference, many = _reference_in(annotation)
    default: Any = None
    if field.default is not PydanticUndefined:
        default = field.default
    elif field.default_factory is not None:
        default = field.default_factory()  # type: ignore[call-arg]  # ours take no argument; pydantic types it as maybe taking the data
    if isinstance(default, BaseModel):
        default = default.model_dump(mode="json")
    return AttributeInfo(
        name=name,
        modifier=modifier,
        required=field.is_required(),
        default=default,
        description=field.description or "",
        type_name=_type_name(annotation) if reference is None else _ref_type_name(reference, many),
        reference=reference,
        many=many,
    )


def _reference_in(annotation: Any) -> tuple[Reference | None, bool]:
    """Find a ``Reference`` in ``Ref[X]``, ``list[Ref[X]]`` or ``Ref[X] | None``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, Reference):
                return meta, False
        return _reference_in(typing.get_args(annotation)[0])
    if origin in (list, tuple, set, frozenset):
        for arg in typing.get_args(annotation):
            found, _ = _reference_in(arg)
            if found is not None:
                return found, True
        return None, False
    if origin is not None:  # Union / Optional
        for arg in typing.get_args(annotation):
            found, many = _reference_in(arg)
            if found is not None:
                return found, many
    return None, False


def _ref_type_name(reference: Reference, many: bool) -> str:
    return f"list[ref:{reference.target_name}]" if many else f"ref:{reference.target_name}"


def _type_name(annotation: Any) -> str:
    if annotation is None:
        return "None"
    if typing.get_origin(annotation) is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__
    return str(annotation).replace("typing.", "")
