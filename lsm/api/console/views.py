"""What the console's instance pages compute from facade answers: no I/O, no rules.

* ``attribute_values``: a form's per-attribute text fields -> attribute values, by the type the
  catalog names (a string-like attribute takes the text as is, any other is JSON);
* ``side_by_side``: the candidate / active / rollback sets as rows with the differences marked;
* ``conflict_story``: the explanation of a 409 -- who changed the instance after the version the
  user had, what they did, and which attributes differ from what the user saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lsm.errors import InvalidAttributes
from lsm.schemas.catalog import AttributeOut
from lsm.schemas.inventory import EventOut, InstanceOut

#: the form field prefix of attribute ``name``
FIELD_PREFIX = "attr."
#: actors of the engine's own steps (not "another client")
ENGINE_ACTORS = frozenset({"system", None})
SETS = ("candidate", "active", "rollback")


def is_text(attribute: AttributeOut) -> bool:
    """Whether a form's text is the attribute's value as is (strings, references and a choice
    of strings: ``Literal['1g', '10g']`` takes ``10g`` as typed, as its inline check says)."""
    kind = attribute.type.replace(" ", "")
    choice = kind.startswith(("Literal['", 'Literal["')) and "|None" not in kind
    return kind in ("str", "str|None", "Optional[str]", "None|str") or kind.startswith("ref:") or choice


def field_text(attribute: AttributeOut, value: Any) -> str:
    """The text a form field shows for ``value``."""
    if value is None:
        return ""
    if is_text(attribute) and isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def attribute_values(fields: dict[str, str], attributes: list[AttributeOut]) -> dict[str, Any]:
    """The attributes a form sets: every non-empty ``attr.<name>`` field, parsed by its type.

    A field that is not valid JSON where JSON is needed, or that names no attribute of the
    entity, is an ``InvalidAttributes`` naming it (422, as the API answers bad attributes).
    """
    known = {a.name: a for a in attributes}
    values: dict[str, Any] = {}
    errors: list[dict[str, str]] = []
    for key, text in fields.items():
        if not key.startswith(FIELD_PREFIX):
            continue
        name = key.removeprefix(FIELD_PREFIX)
        if name not in known:
            errors.append({"path": name, "reason": "not an attribute of this entity"})
            continue
        if text.strip() == "":
            continue
        if is_text(known[name]):
            values[name] = text
            continue
        try:
            values[name] = json.loads(text)
        except ValueError:
            errors.append(
                {"path": name, "reason": f"not a valid {known[name].type} (JSON expected): {text[:80]!r}"}
            )
    if errors:
        raise InvalidAttributes(errors)
    return values


@dataclass(frozen=True)
class SetRow:
    """One attribute across the three sets; ``changed``: the sets do not all agree."""

    name: str
    values: tuple[str | None, ...]
    changed: bool
    differs: tuple[bool, ...]


def side_by_side(instance: InstanceOut) -> list[SetRow]:
    """Rows of the three attribute sets; a cell differs when it is not the active set's value."""
    sets = [instance.candidate_attributes, instance.active_attributes, instance.rollback_attributes]
    names = sorted({name for s in sets if s for name in s})
    rows = []
    for name in names:
        raw = [s.get(name, _MISSING) if s is not None else _ABSENT for s in sets]
        present = [v for v in raw if v is not _ABSENT]
        reference = raw[1] if raw[1] is not _ABSENT else (present[0] if present else _ABSENT)
        differs = tuple(v is not _ABSENT and v != reference for v in raw)
        rows.append(
            SetRow(
                name=name,
                values=tuple(_show(v) for v in raw),
                changed=any(v != present[0] for v in present) if present else False,
                differs=differs,
            )
        )
    return rows


class _Marker:
    def __init__(self, text: str | None) -> None:
        self.text = text


_MISSING = _Marker("(not set)")
_ABSENT = _Marker(None)


def _show(value: Any) -> str | None:
    if isinstance(value, _Marker):
        return value.text
    return json.dumps(value, sort_keys=True)


@dataclass
class ConflictStory:
    """A 409 told to a person: what happened since the version they had."""

    had: int
    now: int
    actor: str | None
    at: datetime | None
    steps: list[EventOut] = field(default_factory=list)
    changed: list[tuple[str, str, str]] = field(default_factory=list)
    attempted: dict[str, Any] = field(default_factory=dict)


def conflict_story(
    had: int,
    instance: InstanceOut,
    log: list[EventOut],
    seen: dict[str, Any] | None,
    attempted: dict[str, Any],
) -> ConflictStory:
    """Who changed ``instance`` after version ``had``, the steps since, and what differs from ``seen``.

    The actor named is the last one that is not the engine itself (``system``): the other client
    whose change the user's request collided with; the engine's steps are listed as well.
    """
    steps = [e for e in log if e.version > had]
    people = [e for e in steps if e.actor not in ENGINE_ACTORS]
    blame = people[-1] if people else (steps[-1] if steps else None)
    current = instance.candidate_attributes or instance.active_attributes or {}
    changed: list[tuple[str, str, str]] = []
    if seen is not None:
        for name in sorted(set(seen) | set(current)):
            before, after = seen.get(name, _MISSING), current.get(name, _MISSING)
            if before != after:
                changed.append((name, _show(before) or "", _show(after) or ""))
    return ConflictStory(
        had=had,
        now=instance.version,
        actor=blame.actor if blame is not None else None,
        at=blame.created_at if blame is not None else None,
        steps=steps,
        changed=changed,
        attempted=attempted,
    )
