"""A model whose handler watches: the target is a dict in this process, the watch a callback.

Why not files: the engine's side of Watch (retry of a failing watch, start and stop with the
rows) is tested here without inotify in the way; ``TARGET`` is the target, ``WATCHING`` holds
the ``drifted`` callback of each watched name (a test changes ``TARGET`` and calls it, as a
real watch would), ``WATCH_FAULTS`` makes the next N starts of a name's watch raise, and
``STARTS`` counts the starts tried per name.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import lsm
from lsm.deploy.handler import Change, CRUDHandler, HandlerContext, WatchContext

TARGET: dict[str, str] = {}
WATCHING: dict[str, Callable[[], None]] = {}
WATCH_FAULTS: dict[str, int] = {}
STARTS: Counter[str] = Counter()
_lock = threading.Lock()


class Box(lsm.ServiceEntity):
    name: str


box = lsm.Binding(Box, lifecycle="simple", name="box", identity="name")  # a model needs one


class Watched(lsm.Resource, type="test::Watched", id_attribute="name"):
    name: str
    value: str


@lsm.handler(Watched)
class WatchedHandler(CRUDHandler[Watched]):
    def read(self, ctx: HandlerContext, resource: Watched) -> Mapping[str, Any] | None:
        with _lock:
            found = TARGET.get(resource.name)
        return None if found is None else {"name": resource.name, "value": found}

    def create(self, ctx: HandlerContext, resource: Watched) -> None:
        with _lock:
            TARGET[resource.name] = resource.value

    def update(self, ctx: HandlerContext, resource: Watched, changes: Mapping[str, Change]) -> None:
        self.create(ctx, resource)

    def delete(self, ctx: HandlerContext, resource: Watched) -> None:
        with _lock:
            TARGET.pop(resource.name, None)

    def watch(self, ctx: WatchContext, resource: Watched) -> Callable[[], None]:
        name = resource.name
        with _lock:
            STARTS[name] += 1
            left = WATCH_FAULTS.get(name, 0)
            if left:
                WATCH_FAULTS[name] = left - 1
                raise RuntimeError(f"the watch of {name} can not start (faults left: {left - 1})")
            WATCHING[name] = ctx.drifted

        def stop() -> None:
            with _lock:
                if WATCHING.get(name) is ctx.drifted:
                    del WATCHING[name]

        return stop


def reset() -> None:
    with _lock:
        TARGET.clear()
        WATCHING.clear()
        WATCH_FAULTS.clear()
        STARTS.clear()
