"""What an operator's inventory search means: ``identity`` text and ``name=value`` attribute
matches, checked against the entity's schema before any SQL runs.

Why here: the text an operator types (``mtu=1500``, ``enabled=true``, ``name=eth0``) is only a
value once the attribute's type says which (the number 1500, the boolean true, the string
eth0), and the store compares JSON with JSON (``lsm.store.instances.search``). So each value
is read through the attribute's pydantic type (as JSON first, then as text), and whatever is
not a search the store can answer is a 422 naming the field: an unknown attribute, a value its
type refuses, a list or object attribute, an identity search on an entity without identity, or
more than the bounds below.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from lsm.catalog import Binding
from lsm.errors import InvalidInput
from lsm.schemas.limits import MAX_IDENTITY_LENGTH
from lsm.store.instances.search import AttributeMatch

#: at most this many ``attribute`` matches in one search
MAX_ATTRIBUTE_MATCHES = 10

#: the longest value an attribute match may compare with (characters)
MAX_MATCH_VALUE_LENGTH = 500


def identity_search(binding: Binding, text: str | None) -> str | None:
    """``text`` as an identity search of ``binding``'s instances (None: no identity search)."""
    if text is None or text == "":
        return None
    if binding.identity is None:
        raise InvalidInput(f"{binding.name} instances have no identity to search", field="identity")
    if len(text) > MAX_IDENTITY_LENGTH:
        raise InvalidInput(f"identity: at most {MAX_IDENTITY_LENGTH} characters", field="identity")
    return text


def attribute_matches(binding: Binding, texts: list[str] | None) -> list[AttributeMatch]:
    """Each ``name=value`` of ``texts`` as a match of the attribute's JSON value."""
    texts = texts or []
    if len(texts) > MAX_ATTRIBUTE_MATCHES:
        raise InvalidInput(
            f"attribute: at most {MAX_ATTRIBUTE_MATCHES} matches in one search", field="attribute"
        )
    fields = binding.entity.model_fields
    found = []
    for text in texts:
        name, equals, value = text.partition("=")
        if not equals or not name:
            raise InvalidInput(f"attribute: {text[:80]!r} is not name=value", field="attribute")
        if name not in fields:
            known = ", ".join(sorted(fields))
            raise InvalidInput(
                f"attribute: {binding.name} has no attribute {name[:80]!r} (it has {known})",
                field="attribute",
                attribute=name[:80],
            )
        if len(value) > MAX_MATCH_VALUE_LENGTH:
            raise InvalidInput(
                f"attribute: a value has at most {MAX_MATCH_VALUE_LENGTH} characters",
                field="attribute",
                attribute=name,
            )
        found.append(AttributeMatch(name, _value(binding, name, value)))
    return found


def _value(binding: Binding, name: str, text: str) -> Any:
    """``text`` as the JSON value of attribute ``name`` (``null`` for ``null`` when it may be)."""
    adapter: TypeAdapter[Any] = TypeAdapter(binding.entity.model_fields[name].annotation or Any)
    try:
        value = adapter.validate_json(text)
    except ValidationError:
        try:
            value = adapter.validate_python(text)
        except ValidationError:
            raise InvalidInput(
                f"attribute: {text[:80]!r} is not a value of {binding.name}.{name}",
                field="attribute",
                attribute=name,
            ) from None
    shown = adapter.dump_python(value, mode="json")
    if isinstance(shown, (list, dict)):
        raise InvalidInput(
            f"attribute: {binding.name}.{name} holds a list or an object; search by a single value",
            field="attribute",
            attribute=name,
        )
    return shown
