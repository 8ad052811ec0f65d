"""The deploy benchmark's model: one do-nothing resource type and its handler, no services.

Why its own handler: the bundled ``null`` handler lives on another branch; the benchmark
measures the engine (plan, claim, run under metaparameters, result writes), so a handler that
returns at once is what it needs.
"""

from __future__ import annotations

from typing import Any

import lsm
from lsm.deploy.handler import Handler, HandlerContext


class Nothing(lsm.ServiceEntity):
    name: str


nothing = lsm.Binding(Nothing, lifecycle="simple", name="nothing")


class Null(lsm.Resource, type="bench::Null", id_attribute="name"):
    name: str
    value: int = 0


@lsm.handler(Null)
class NullHandler(Handler[Null]):
    def deploy(self, ctx: HandlerContext, resource: Any, *, dry_run: bool = False) -> None:
        ctx.action = "create"
