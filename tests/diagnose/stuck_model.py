"""A model that gets stuck on purpose, for the diagnose tests (tests/diagnose/test_causes.py).

``Router(fail=True)`` makes its ``test::Device`` handler fail (``retries`` tries after the first,
ten minutes apart); a ``Port`` requires its router's device, on another agent. ``Widget(explode=True)``
raises in its implementation, so its validation compile fails at a line of this file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import lsm
from lsm.deploy.handler import Change, CRUDHandler, HandlerContext, HandlerError
from lsm.model.meta import Meta


class Router(lsm.ServiceEntity):
    name: str
    fail: Annotated[bool, lsm.rw_plus] = False
    retries: Annotated[int, lsm.rw_plus] = 0


class Port(lsm.ServiceEntity):
    name: str
    router: lsm.Ref[Router]


class Widget(lsm.ServiceEntity):
    name: str
    explode: Annotated[bool, lsm.rw_plus] = False


router = lsm.Binding(Router, lifecycle="simple", identity="name")
port = lsm.Binding(Port, lifecycle="simple", owner=router, relation_to_owner="router")
widget = lsm.Binding(Widget, lifecycle="simple", identity="name")


class Device(lsm.Resource, type="test::Device", id_attribute="name"):
    name: str
    broken: bool = False


@lsm.handler(Device)
class DeviceHandler(CRUDHandler[Device]):
    """Keeps each device as a file under the agent's state directory; a broken one never answers."""

    def _file(self, ctx: HandlerContext, resource: Device) -> Path:
        return ctx.state_dir / "devices" / f"{resource.name}.json"

    def read(self, ctx: HandlerContext, resource: Device) -> Mapping[str, Any] | None:
        if resource.broken:
            raise HandlerError(f"device {resource.name} does not answer")
        file = self._file(ctx, resource)
        return {"name": resource.name, "broken": False} if file.exists() else None

    def create(self, ctx: HandlerContext, resource: Device) -> None:
        file = self._file(ctx, resource)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(resource.name)

    def update(self, ctx: HandlerContext, resource: Device, changes: Mapping[str, Change]) -> None:
        self._file(ctx, resource).write_text(resource.name)

    def delete(self, ctx: HandlerContext, resource: Device) -> None:
        self._file(ctx, resource).unlink()


def router_device(name: str) -> str:
    return Device.resource_id("routers", f"router-{name}")


@lsm.implementation(router)
def router_device_of(r: lsm.Service[Router]) -> Iterator[lsm.Resource]:
    meta = Meta(retry=r.retries, delay=600) if r.retries else None
    yield Device(agent="routers", name=f"router-{r.name}", broken=r.fail, meta=meta, purged=r.purge_resources)


@lsm.implementation(port)
def port_device_of(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    yield Device(
        agent="ports",
        name=f"port-{p.router.name}-{p.name}",
        requires=[router_device(p.router.name)],
        purged=p.purge_resources,
    )


@lsm.implementation(widget)
def widget_device(w: lsm.Service[Widget]) -> Iterator[lsm.Resource]:
    if w.explode:
        raise ValueError(f"widget {w.name} exploded")
    yield Device(agent="widgets", name=f"widget-{w.name}", purged=w.purge_resources)
