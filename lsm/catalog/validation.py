"""Attribute validation for create, update and server-side (``r``) writes.

Why one module: the API, the Python client's callers and the compiler (allocation) must see
exactly the same rules, and every refusal must name the attribute path and the reason so that
an operator can fix the request. Values are stored as JSON (``model_dump(mode="json")``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from lsm.catalog.entity import ServiceEntity
from lsm.catalog.modifiers import Modifier
from lsm.errors import InvalidAttributes
from lsm.schemas.limits import MAX_IDENTITY_LENGTH


def pydantic_errors(exc: ValidationError) -> list[dict[str, str]]:
    """Pydantic errors as ``[{"path", "reason"}]``, with unknown attributes said plainly."""
    out = []
    for err in exc.errors():
        path = ".".join(str(p) for p in err["loc"]) or "<root>"
        reason = "unknown attribute" if err["type"] == "extra_forbidden" else err["msg"]
        out.append({"path": path, "reason": reason})
    return out


def _check_object(attributes: Any) -> dict[str, Any]:
    if not isinstance(attributes, dict):
        raise InvalidAttributes([{"path": "attributes", "reason": "must be an object"}])
    return attributes


def validate_attributes(entity: type[ServiceEntity], attributes: dict[str, Any]) -> dict[str, Any]:
    """Validate a full attribute set; return it as JSON with defaults filled in.

    Booleans are booleans: pydantic's lax mode turns ``true`` into ``1`` for an ``int``
    attribute and ``0`` into ``false`` for a ``bool`` one; such a coercion is refused here,
    naming the attribute, so that a typo is not stored as a different value.
    """
    try:
        validated = entity.model_validate(attributes).model_dump(mode="json")
    except ValidationError as exc:
        raise InvalidAttributes(pydantic_errors(exc)) from None
    errors = list(_coerced_booleans(attributes, validated, ""))
    if errors:
        raise InvalidAttributes(errors)
    return validated


def _coerced_booleans(given: Any, stored: Any, path: str) -> Iterator[dict[str, str]]:
    """Every place where a boolean became a number or a number became a boolean."""
    if isinstance(given, dict) and isinstance(stored, dict):
        for key, value in given.items():
            if key in stored:
                yield from _coerced_booleans(value, stored[key], f"{path}.{key}" if path else str(key))
    elif isinstance(given, list) and isinstance(stored, list) and len(given) == len(stored):
        for index, (value, out) in enumerate(zip(given, stored, strict=True)):
            yield from _coerced_booleans(value, out, f"{path}.{index}")
    elif isinstance(given, bool) and not isinstance(stored, bool) and isinstance(stored, int | float):
        yield {"path": path, "reason": "a boolean where a number is expected"}
    elif isinstance(stored, bool) and not isinstance(given, bool):
        yield {"path": path, "reason": "a boolean is expected (true or false)"}


def validate_create(entity: type[ServiceEntity], attributes: Any) -> dict[str, Any]:
    """Attributes of a new instance: ``r`` attributes may not be given (the server sets them)."""
    attributes = _check_object(attributes)
    infos = entity.attributes()
    errors = [
        {"path": name, "reason": "'r' attribute: set by the server only"}
        for name in attributes
        if name in infos and infos[name].modifier is Modifier.R
    ]
    if errors:
        raise InvalidAttributes(errors)
    return validate_attributes(entity, attributes)


def validate_update(entity: type[ServiceEntity], current: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Top-level merge of ``patch`` into ``current``; only ``rw+`` attributes may change.

    ``current`` is the candidate set, or a copy of the active set when there is no candidate.
    Giving an ``rw`` attribute its current value is accepted (clients often send whole objects).
    """
    patch = _check_object(patch)
    infos = entity.attributes()
    errors: list[dict[str, str]] = []
    for name, value in patch.items():
        info = infos.get(name)
        if info is None:
            errors.append({"path": name, "reason": "unknown attribute"})
        elif info.modifier is Modifier.R:
            errors.append({"path": name, "reason": "'r' attribute: set by the server only"})
        elif info.modifier is Modifier.RW and not _same(entity, name, value, current.get(name)):
            errors.append({"path": name, "reason": "'rw' attribute: set at creation, read-only afterwards"})
    if errors:
        raise InvalidAttributes(errors)
    return validate_attributes(entity, {**current, **patch})


def identity_value(attributes: dict[str, Any], attribute: str | None) -> str | None:
    """The identity of validated ``attributes`` as stored (text), or ``InvalidAttributes`` naming it.

    Why a length limit: the value is a key of the identity index and part of resource ids,
    which are index keys too; a value that does not fit an index would be accepted here and
    then fail every full compile of the environment (``lsm.schemas.limits``).
    """
    if attribute is None:
        return None
    value = str(attributes[attribute])
    if len(value) > MAX_IDENTITY_LENGTH:
        raise InvalidAttributes(
            [{"path": attribute, "reason": f"identity value longer than {MAX_IDENTITY_LENGTH} characters"}]
        )
    return value


def validate_server_write(
    entity: type[ServiceEntity], current: dict[str, Any], values: dict[str, Any]
) -> dict[str, Any]:
    """Values a compile allocates: only ``r`` attributes may be written by the server."""
    infos = entity.attributes()
    errors = [
        {"path": name, "reason": "only 'r' attributes can be allocated by the server"}
        for name in values
        if name not in infos or infos[name].modifier is not Modifier.R
    ]
    if errors:
        raise InvalidAttributes(errors)
    return validate_attributes(entity, {**current, **values})


def _same(entity: type[ServiceEntity], name: str, new: Any, old: Any) -> bool:
    """Compare after validation so that ``"10"`` vs ``10`` or UUID spelling do not count as a change."""
    if new == old:
        return True
    try:
        field = entity.model_fields[name]
        from pydantic import TypeAdapter

        adapter: TypeAdapter[Any] = TypeAdapter(field.annotation if field.annotation is not None else Any)
        return bool(adapter.dump_python(adapter.validate_python(new), mode="json") == old)
    except (ValidationError, KeyError, TypeError):
        return False
