"""``std::Null``: a resource that is always in its desired state.

Why: tests and benchmarks need a handler whose cost is nothing, so that what they measure is
the engine (scheduling, the action log, the lifecycle feedback), not a target. The handler takes
no resource class, so the engine hands it a ``StoredResource`` (no validation per deploy), and
``deploy`` reports ``none`` without reading, comparing or writing anything: a purged ``Null``
is "removed" as cheaply as a present one is "there".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import lsm
from lsm.deploy.handler import ENGINE_ATTRIBUTES


class Null(lsm.Resource, type="std::Null", id_attribute="name"):
    """Nothing on any target; ``data`` is carried along so that versions can differ."""

    name: str
    data: Any = None


class NullHandler(lsm.CRUDHandler[Any]):
    """Does nothing: every deploy is action ``none`` with no changes."""

    resource_type = "std::Null"

    def read(self, ctx: lsm.HandlerContext, resource: Any) -> Mapping[str, Any] | None:
        if resource.purged:
            return None
        return {k: v for k, v in resource.attributes().items() if k not in ENGINE_ATTRIBUTES}

    def deploy(self, ctx: lsm.HandlerContext, resource: Any, *, dry_run: bool = False) -> None:
        ctx.action = "none"
