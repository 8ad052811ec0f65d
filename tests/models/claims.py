"""A test model whose instances claim a named slot: two claims of one ``path`` break export rule 1.

Each ``claim`` owns one ``claims::Slot`` (id ``path``), deployed by an in-memory handler
(``SLOTS``: path -> holder). A claim of a path that another claim's set still holds passes its
own validation (a validation compiles only its own tree) and is refused by its partial export:
"resource ... can not be part of multiple resource sets". A claim named in ``BROKEN`` makes
the implementation raise in exporting compiles only (its validations pass): a model error that
reaches the export, and goes away when the test empties the set.

``BROKEN`` is kept in files, not in memory: the implementation runs in a compile process
(``lsm.compiler.isolation``), the test that breaks a claim in the test process. The folder is
named after the test run (``LSM_TEST_RUN``, set by ``tests/conftest.py`` before any compile
process starts), so that runs never see each other's marks.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import lsm
from lsm.deploy.handler import Change, CRUDHandler, HandlerContext
from lsm.model.context import current_compile

#: what the handler deployed: path -> holder
SLOTS: dict[str, str] = {}


class _MarkedNames:
    """A set of names that every process of the test run sees: one empty file a name."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def add(self, name: str) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / name).touch()

    def discard(self, name: str) -> None:
        (self.folder / name).unlink(missing_ok=True)

    def clear(self) -> None:
        for mark in self.folder.glob("*"):
            mark.unlink(missing_ok=True)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (self.folder / name).exists()


#: names of claims whose implementation raises in an exporting compile
BROKEN = _MarkedNames(Path(tempfile.gettempdir()) / f"lsm-claims-{os.environ.get('LSM_TEST_RUN', 'none')}")
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
