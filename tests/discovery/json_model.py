"""A test model whose discovery handler reports what a JSON file says, valid or not.

Why: the end-to-end tests need a discovery handler whose output they control, to show that a
run reporting an id that is not a resource id fails that run only (an ``error`` action in its
log) and leaves what it found before intact. The ``feed`` entity uses the ``adoptable``
lifecycle of ``examples/discovery`` (load it with that directory as a lifecycle directory).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import lsm


class JsonDiscovery(lsm.Resource, type="test::JsonDiscovery", id_attribute="name"):
    """Report the ``{resource_id: attributes}`` object stored in the file ``source``."""

    name: str
    source: str


@lsm.handler(JsonDiscovery)
class JsonDiscoveryHandler(lsm.DiscoveryHandler[JsonDiscovery, Any]):
    def discover_resources(self, ctx: lsm.HandlerContext, resource: JsonDiscovery) -> Mapping[str, Any]:
        found = json.loads(Path(resource.source).read_text())
        ctx.info("read the feed", source=resource.source, entries=len(found))
        return dict(found)


class Feed(lsm.ServiceEntity):
    """The intent to report what the JSON file ``source`` on ``host`` says."""

    name: str
    host: str
    source: str


feed = lsm.Binding(Feed, lifecycle="adoptable", name="feed", identity="name")


@lsm.implementation(feed)
def feed_resource(f: lsm.Service[Feed]) -> Iterator[lsm.Resource]:
    yield JsonDiscovery(agent=f.host, name=f.name, source=f.source, purged=f.purge_resources)
