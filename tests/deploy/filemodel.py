"""A test model whose handlers touch real files: what the dry-run and deploy-route tests deploy.

``test::File`` is written under its ``path`` by ``FileHandler`` (a real CRUD handler: it reads
the file's content, creates, updates and deletes it). ``test::Broken``'s handler raises in
``read``; ``test::Orphan`` has no handler at all. ``Box`` is there because a model needs a binding.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lsm
import lsm.catalog as c
from lsm.deploy.handler import Change, CRUDHandler, HandlerContext


class Box(c.ServiceEntity):
    name: str


box = c.Binding(Box, lifecycle="simple", identity="name")


class TFile(lsm.Resource, type="test::File", id_attribute="path"):
    path: str
    content: str = ""


class Broken(lsm.Resource, type="test::Broken", id_attribute="name"):
    name: str


class Orphan(lsm.Resource, type="test::Orphan", id_attribute="name"):
    name: str


#: calls of every FileHandler, so a test sees that a dry run only read
CALLS: list[str] = []


@lsm.handler(TFile)
class FileHandler(CRUDHandler[TFile]):
    def pre(self, ctx: HandlerContext, resource: TFile) -> None:
        CALLS.append("pre")

    def post(self, ctx: HandlerContext, resource: TFile) -> None:
        CALLS.append("post")

    def read(self, ctx: HandlerContext, resource: TFile) -> Mapping[str, Any] | None:
        CALLS.append("read")
        path = Path(resource.path)
        if not path.exists():
            return None
        ctx.info("read the file", size=path.stat().st_size)
        return {"path": resource.path, "content": path.read_text()}

    def create(self, ctx: HandlerContext, resource: TFile) -> None:
        CALLS.append("create")
        Path(resource.path).write_text(resource.content)

    def update(self, ctx: HandlerContext, resource: TFile, changes: Mapping[str, Change]) -> None:
        CALLS.append("update")
        Path(resource.path).write_text(resource.content)

    def delete(self, ctx: HandlerContext, resource: TFile) -> None:
        CALLS.append("delete")
        Path(resource.path).unlink()


@lsm.handler(Broken)
class BrokenHandler(CRUDHandler[Broken]):
    def read(self, ctx: HandlerContext, resource: Broken) -> Mapping[str, Any] | None:
        raise RuntimeError(f"the target of {resource.name} can not be reached")
