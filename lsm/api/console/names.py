"""Instances named as an operator names them: by their entity's identity, not by their UUID.

Why: an inventory of ports that shows each port's router as ``3f2a…`` cannot tell eth0 on
edge-1 from eth0 on edge-2 without opening each. A reference (the owner, an ``lsm.Ref``
attribute) is shown by the identity value of the instance it points to, linked to its page; an
instance whose entity has no identity, or that is gone, keeps its short id (the full one on
hover). The reads are keyed (one per distinct instance shown), and a page asks once per id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsm.errors import InvalidInput, UnknownInstance
from lsm.facade import Facades, RequestContext
from lsm.schemas.catalog import EntityOut
from lsm.schemas.inventory import InstanceOut

#: how many characters of a UUID a page shows (the whole id on hover and in the copy button)
SHORT_ID = 8


@dataclass(frozen=True, slots=True)
class Named:
    """An instance as a link: its entity, id and what a person reads (identity or short id)."""

    entity: str
    id: str
    text: str
    #: whether ``text`` is the identity (else the short id)
    by_identity: bool


def attributes_of(instance: InstanceOut) -> dict[str, Any]:
    """The attributes a list shows: the candidate set while there is one, else the active one."""
    return instance.candidate_attributes or instance.active_attributes or {}


def identity_text(entity: EntityOut, instance: InstanceOut) -> str | None:
    if entity.identity is None:
        return None
    value = attributes_of(instance).get(entity.identity)
    return None if value is None else str(value)


class Namer:
    """Names instances of any entity for one page (a cache of entities and instances read)."""

    def __init__(self, facades: Facades, ctx: RequestContext) -> None:
        self.facades = facades
        self.ctx = ctx
        self._entities: dict[str, EntityOut | None] = {}
        self._named: dict[tuple[str, str], Named] = {}

    def entity(self, name: str) -> EntityOut | None:
        if name not in self._entities:
            try:
                self._entities[name] = self.facades.catalog.get_entity(self.ctx, name, summary=False)
            except Exception:  # an entity the model no longer has: names fall back to short ids
                self._entities[name] = None
        return self._entities[name]

    def name(self, entity: str, instance_id: str) -> Named:
        """The instance ``instance_id`` of ``entity`` by its identity (short id when it has none)."""
        key = (entity, instance_id)
        if key not in self._named:
            found = self.entity(entity)
            text = None
            if found is not None and found.identity is not None:
                try:
                    text = identity_text(
                        found, self.facades.inventory.get_instance(self.ctx, entity, instance_id)
                    )
                except (UnknownInstance, InvalidInput):
                    text = None
            self._named[key] = Named(entity, instance_id, text or instance_id[:SHORT_ID], text is not None)
        return self._named[key]


#: a reference field offers at most this many instances to pick from (more: a text box for the id)
MOST_CHOICES = 500


@dataclass(frozen=True, slots=True)
class Picker:
    """A reference field's choices: the entity it points to and its live instances by identity."""

    target: str
    options: list[Named]


def reference_choices(namer: Namer, entity: EntityOut) -> dict[str, Picker]:
    """Per single reference attribute of ``entity``: the live instances it may point to, by
    identity (sorted), for the form's picker; an attribute whose target has more than
    ``MOST_CHOICES`` live instances is left out (its field stays a text box for the id)."""
    found: dict[str, Picker] = {}
    for relation in entity.relations:  # by binding name (an attribute's ``relation`` names the class)
        if relation.many:
            continue
        target = relation.target
        target_entity = namer.entity(target)
        rows = namer.facades.inventory.list_instances(namer.ctx, target, limit=MOST_CHOICES + 1)
        if len(rows) > MOST_CHOICES or target_entity is None:
            continue
        named = []
        for row in rows:
            text = identity_text(target_entity, row)
            named.append(Named(target, row.id, text or row.id[:SHORT_ID], text is not None))
        options = sorted(named, key=lambda n: (not n.by_identity, n.text, n.id))
        found[relation.attribute] = Picker(target, options)
    return found
