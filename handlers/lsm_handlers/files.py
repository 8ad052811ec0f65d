"""``std::File``: a file with a given content and permission bits.

Why this shape: it is the smallest handler that changes something real, so it is the one the
docs and the engine tests use. ``read`` reports what is on disk (content and mode, ``None`` when
the file is missing); ``create`` and ``update`` write a temporary file and rename it over the
target, so no reader ever sees half a file; an update that changes only ``mode`` is a
``chmod``, not a rewrite. A relative path is refused where the resource is built: the agent's
working directory is nobody's business.

**Watch.** The handler watches each deployed file with the agent's one inotify instance
(``WatchContext.files``): a change behind the engine's back is checked and repaired at once,
without a poll or a repair run (docs/handlers.md §4).

The parent directory must exist (model it with another resource, or keep files where one
exists): creating directories nobody purges would leave debris behind.

Every access goes through the agent's jail (``ctx.jail``, ``lsm.deploy.jail``): only under the
roots the operator configured, never through a link that leads out, never a setuid, setgid or
sticky mode unless the agent allows it. A path whose name parts the file system can not hold
(``lsm.schemas.limits.MAX_FILE_NAME_BYTES``) is refused where the resource is built, so the
order's compile fails, not its deploy.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field, field_validator

import lsm
from lsm.deploy.handler import Change
from lsm.deploy.jail import checked_path


class File(lsm.Resource, type="std::File", id_attribute="path"):
    """A regular file at an absolute ``path`` holding ``content`` (UTF-8) with ``mode``."""

    path: str
    content: str = ""
    mode: int = Field(0o644, ge=0, le=0o7777)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return checked_path(value, "std::File path")


class FileHandler(lsm.CRUDHandler[File]):
    """Reads, writes (atomically), chmods and removes one file, inside the agent's jail."""

    def read(self, ctx: lsm.HandlerContext, resource: File) -> Mapping[str, Any] | None:
        found = ctx.jail.read(resource.path, who=resource.id)
        if found is None:
            return None
        data, info = found
        try:
            content: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            content = None  # not text: differs from any desired content, so it is rewritten
        return {"path": resource.path, "content": content, "mode": stat.S_IMODE(info.st_mode)}

    def _write(self, ctx: lsm.HandlerContext, resource: File) -> None:
        ctx.jail.write(resource.path, resource.content.encode("utf-8"), resource.mode, who=resource.id)

    def create(self, ctx: lsm.HandlerContext, resource: File) -> None:
        self._write(ctx, resource)
        ctx.info("file written", path=resource.path, bytes=len(resource.content.encode("utf-8")))

    def update(self, ctx: lsm.HandlerContext, resource: File, changes: Mapping[str, Change]) -> None:
        if "content" in changes:
            self._write(ctx, resource)  # writes the mode too
            ctx.info("file rewritten", path=resource.path)
            return
        if "mode" in changes:
            ctx.jail.chmod(resource.path, resource.mode, who=resource.id)
            ctx.info("file mode changed", path=resource.path, mode=oct(resource.mode))

    def delete(self, ctx: lsm.HandlerContext, resource: File) -> None:
        if ctx.jail.remove(resource.path, who=resource.id):
            ctx.info("file removed", path=resource.path)

    def watch(self, ctx: lsm.WatchContext, resource: File) -> Callable[[], None]:
        """Any change to the file (content, bits, removed, replaced) may be drift: watched through
        the agent's one inotify instance, on the file's directory (a file renamed over it is a new
        inode). Only under the agent's roots, like every access (the path is resolved first)."""
        _root, resolved = ctx.jail.resolve(resource.path, who=resource.id)
        return ctx.files.watch(resolved, ctx.drifted, ctx.failed)
