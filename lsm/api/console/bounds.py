"""What a form field may hold, read from the entity's JSON schema, for the browser to check
before the POST (``static/console.js``): bounds, lengths, pattern, choices and required.

Why from the schema: the engine validates attributes with pydantic, and the JSON schema it
serves (``/lsm/v1/service_catalog/{entity}/schema``) carries the same rules
(``Field(ge=1, le=9000)`` is ``minimum``/``maximum``). A form that knows them says "mtu must be
at most 9000" as the operator types, not after a round trip; the server still decides (the
browser's check is a courtesy, never a gate).
"""

from __future__ import annotations

import json
from typing import Any

#: the JSON schema keywords a field carries, and the data attribute the browser reads each from
KEYWORDS = {
    "minimum": "minimum",
    "maximum": "maximum",
    "exclusiveMinimum": "exclusive-minimum",
    "exclusiveMaximum": "exclusive-maximum",
    "minLength": "min-length",
    "maxLength": "max-length",
    "pattern": "pattern",
    "enum": "enum",
}


def _branch(schema: dict[str, Any], prop: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The property's own schema (``$ref`` followed, the non-null branch of an optional) and
    whether it may be null."""
    nullable = False
    options = prop.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
        nullable = len(kept) < len(options)
        prop = kept[0] if len(kept) == 1 else {}
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
    return prop, nullable


def field_rules(schema: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per attribute: ``{data attribute: value}`` for the field (numbers and patterns as text,
    the choices of an enum as JSON), ``nullable`` when ``null`` is also a value."""
    required = set(schema.get("required", []))
    rules: dict[str, dict[str, str]] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if not isinstance(prop, dict):
            continue
        own, nullable = _branch(schema, prop)
        found = {
            data: (json.dumps(own[key]) if key == "enum" else str(own[key]))
            for key, data in KEYWORDS.items()
            if key in own
        }
        if nullable:
            found["nullable"] = "true"
        if name in required:
            found["required"] = "true"
        rules[name] = found
    return rules
