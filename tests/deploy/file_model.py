"""A router_port-like model whose resources are real files, with its handler defined in the model.

A router is one ``test::File`` (``routers/<name>.conf``, agent ``routers``); each port one more
(``ports/<router>/<name>.conf``, agent ``ports``) that requires its router's file: requires cross
agents. The handler writes under the agent's ``state_dir``. ``FAULTS`` lets a test make the
handler fail (a count of failures to come per file path, or -1 for ever), ``SLOW`` makes it
sleep (seconds per path; or content ``slow:<seconds>``, seen by agent processes too), and
``CALLS`` records every create/update/delete in order. ``HOLD`` keeps a handler blocked (as a
target that never answers does) until the test sets the path's event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import lsm
from lsm.deploy.handler import Change, CRUDHandler, HandlerContext, HandlerError

FAULTS: dict[str, int] = {}
SLOW: dict[str, float] = {}
HOLD: dict[str, threading.Event] = {}
CALLS: list[tuple[str, str]] = []
#: semaphore id -> handlers inside it now, and the most seen at once
ACTIVE: dict[str, int] = {}
PEAK: dict[str, int] = {}
_lock = threading.Lock()


class Router(lsm.ServiceEntity):
    name: str
    motd: Annotated[str, lsm.rw_plus] = "hello"


class Port(lsm.ServiceEntity):
    name: str
    router: lsm.Ref[Router]
    mtu: Annotated[int, lsm.rw_plus] = 1500


router = lsm.Binding(Router, lifecycle="simple", name="router", identity="name")
port = lsm.Binding(Port, lifecycle="simple", name="port", owner=router, relation_to_owner="router")


class ConfigFile(lsm.Resource, type="test::File", id_attribute="path"):
    path: str
    content: str


@lsm.handler(ConfigFile)
class FileHandler(CRUDHandler[ConfigFile]):
    def pre(self, ctx: HandlerContext, resource: ConfigFile) -> None:
        with _lock:
            for name in _sema_ids(resource):
                ACTIVE[name] = ACTIVE.get(name, 0) + 1
                PEAK[name] = max(PEAK.get(name, 0), ACTIVE[name])

    def post(self, ctx: HandlerContext, resource: ConfigFile) -> None:
        with _lock:
            for name in _sema_ids(resource):
                ACTIVE[name] -= 1

    def _fault(self, resource: ConfigFile) -> None:
        held = HOLD.get(resource.path)
        if held is not None:
            held.wait()  # blocked inside C, as on a socket: only the event ends it
        seconds = SLOW.get(resource.path, SLOW.get("*", 0.0))
        if resource.content.startswith("slow:"):  # for agents in other processes
            seconds = float(resource.content.split(":", 1)[1])
        if seconds:
            time.sleep(seconds)
        with _lock:
            left = FAULTS.get(resource.path, 0)
            if left == 0:
                return
            if left > 0:
                FAULTS[resource.path] = left - 1
        raise HandlerError(f"injected failure of {resource.path}")

    def _file(self, ctx: HandlerContext, resource: ConfigFile) -> Path:
        return ctx.state_dir / resource.path

    def read(self, ctx: HandlerContext, resource: ConfigFile) -> Mapping[str, Any] | None:
        self._fault(resource)
        file = self._file(ctx, resource)
        if not file.exists():
            return None
        return {"path": resource.path, "content": file.read_text()}

    def create(self, ctx: HandlerContext, resource: ConfigFile) -> None:
        file = self._file(ctx, resource)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(resource.content)
        with _lock:
            CALLS.append(("create", resource.path))

    def update(self, ctx: HandlerContext, resource: ConfigFile, changes: Mapping[str, Change]) -> None:
        self._file(ctx, resource).write_text(resource.content)
        with _lock:
            CALLS.append(("update", resource.path))

    def delete(self, ctx: HandlerContext, resource: ConfigFile) -> None:
        self._file(ctx, resource).unlink()
        with _lock:
            CALLS.append(("delete", resource.path))


def _sema_ids(resource: ConfigFile) -> list[str]:
    return [spec.rpartition(":")[0] or spec for spec in (resource.meta.sema if resource.meta else ())]


def router_file(name: str) -> str:
    return ConfigFile.resource_id("routers", f"routers/{name}.conf")


@lsm.implementation(router)
def router_config(r: lsm.Service[Router]) -> Iterator[lsm.Resource]:
    yield ConfigFile(
        agent="routers", path=f"routers/{r.name}.conf", content=f"motd={r.motd}", purged=r.purge_resources
    )


@lsm.implementation(port)
def port_config(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    yield ConfigFile(
        agent="ports",
        path=f"ports/{p.router.name}/{p.name}.conf",
        content=f"mtu={p.mtu}",
        purged=p.purge_resources,
        requires=[router_file(p.router.name)],
    )
