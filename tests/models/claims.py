"""A test model whose instances claim a named slot: two claims of one ``path`` break export rule 1.

Each ``claim`` owns one ``claims::Slot`` (id ``path``), deployed by an in-memory handler
(``SLOTS``: path -> holder). A claim of a path that another claim's set still holds passes its
own validation (a validation compiles only its own tree) and is refused by its partial export:
"resource ... can not be part of multiple resource sets". A claim named in ``BROKEN`` makes
the implementation raise in exporting compiles only (its validations pass): a model error that
reaches the export, and goes away when the test empties the set.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

import lsm
from lsm.deploy.handler import Change, CRUDHandler, HandlerContext
from lsm.model.context import current_compile

#: what the handler deployed: path -> holder
SLOTS: dict[str, str] = {}
#: names of claims whose implementation raises in an exporting compile
BROKEN: set[str] = set()
_lock = threading.Lock()


class Claim(lsm.ServiceEntity):
    name: str
    path: Annotated[str, lsm.rw_plus]


claim = lsm.Binding(Claim, lifecycle="simple", name="claim", identity="name")


class Slot(lsm.Resource, type="claims::Slot", id_attribute="path"):
    path: str
    holder: str


@lsm.handler(Slot)
class SlotHandler(CRUDHandler[Slot]):
    def read(self, ctx: HandlerContext, resource: Slot) -> Mapping[str, Any] | None:
        with _lock:
            holder = SLOTS.get(resource.path)
        return None if holder is None else {"path": resource.path, "holder": holder}

    def create(self, ctx: HandlerContext, resource: Slot) -> None:
        with _lock:
            SLOTS[resource.path] = resource.holder

    def update(self, ctx: HandlerContext, resource: Slot, changes: Mapping[str, Change]) -> None:
        self.create(ctx, resource)

    def delete(self, ctx: HandlerContext, resource: Slot) -> None:
        with _lock:
            SLOTS.pop(resource.path, None)


@lsm.implementation(claim)
def slot(c: lsm.Service[Claim]) -> Iterator[lsm.Resource]:
    if c.name in BROKEN and not current_compile().validation:
        raise RuntimeError(f"claim {c.name} is broken on purpose")
    yield Slot(agent="slots", path=c.path, holder=c.name, purged=c.purge_resources)
