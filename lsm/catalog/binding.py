"""``Binding``: ties a service entity to a lifecycle, an API name, an identity and an owner.

Ownership groups are declared here: a binding with an ``owner`` names, in
``relation_to_owner``, the attribute holding the owner instance id. Partial compiles walk this
relation up to the root and back down, so it must be a single, ``rw`` (never changing)
reference to the owner's entity; that is checked when the catalog is built.

    router = lsm.Binding(Router, lifecycle="simple", name="router", identity="mgmt_ip")
    port = lsm.Binding(Port, lifecycle="simple", name="port", owner=router, relation_to_owner="router")

``summary`` names the attributes an inventory lists beside each instance's identity (the
console's columns); by default the identity and the first ``SUMMARY_DEFAULT`` other attributes,
in declaration order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lsm.catalog.entity import ServiceEntity

#: how many attributes besides the identity an inventory lists when the binding names none
SUMMARY_DEFAULT = 3


def default_api_name(entity: type[ServiceEntity]) -> str:
    """``VirtualWire`` -> ``virtual_wire``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", entity.__name__).lower()


@dataclass(eq=False)
class Binding:
    """How an entity is exposed and run. Compared by identity: one object per entity."""

    entity: type[ServiceEntity]
    lifecycle: str = "simple"
    name: str = ""
    identity: str | None = None
    owner: Binding | None = None
    relation_to_owner: str | None = None
    description: str = ""
    #: defaults for the ``config_name`` switches of auto transfers (missing names are enabled)
    config: dict[str, bool] = field(default_factory=dict)
    #: attributes an inventory lists per instance (empty: the identity and the first few others)
    summary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            self.name = default_api_name(self.entity)
        if not self.description:
            self.description = self.entity.entity_description()

    def summary_attributes(self) -> list[str]:
        """What an inventory lists per instance: ``summary``, or the identity and the first few."""
        if self.summary:
            return list(self.summary)
        names = list(self.entity.attributes())
        first = [self.identity] if self.identity else []
        return first + [n for n in names if n != self.identity][:SUMMARY_DEFAULT]

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entity": self.entity.__name__,
            "description": self.description,
            "lifecycle": self.lifecycle,
            "identity": self.identity,
            "owner": None if self.owner is None else self.owner.name,
            "relation_to_owner": self.relation_to_owner,
            "summary": self.summary_attributes(),
            "attributes": [info.describe() for info in self.entity.attributes().values()],
        }

    def __repr__(self) -> str:
        return f"Binding({self.name!r}, entity={self.entity.__name__}, lifecycle={self.lifecycle!r})"
