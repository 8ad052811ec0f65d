"""``std::File``: a file with a given content and permission bits; ``std::Directory``: a directory.

Why this shape: it is the smallest handler that changes something real, so it is the one the
docs and the engine tests use. ``read`` reports what is on disk (content and mode, ``None`` when
the file is missing); ``create`` and ``update`` write a temporary file and rename it over the
target, so no reader ever sees half a file; an update that changes only ``mode`` is a
``chmod``, not a rewrite. A relative path is refused where the resource is built: the agent's
working directory is nobody's business.

The parent directory must exist (model it with a ``std::Directory``, or keep files where one
exists): creating directories nobody purges would leave debris behind. A file or directory
needs the ``std::Directory`` of its nearest managed ancestor: ``autoedges`` names them, so the
engine orders the directory first without a written ``requires`` (docs/semantics.md §5).

**Watch.** The handler watches each deployed file with the agent's one inotify instance
(``WatchContext.files``): a change behind the engine's back is checked and repaired at once,
without a poll or a repair run (docs/handlers.md §4).

Every access goes through the agent's jail (``ctx.jail``, ``lsm.deploy.jail``): only under the
roots the operator configured, never through a link that leads out, never a setuid, setgid or
sticky mode unless the agent allows it. A path whose name parts the file system can not hold
(``lsm.schemas.limits.MAX_FILE_NAME_BYTES``) is refused where the resource is built, so the
order's compile fails, not its deploy.
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from pydantic import Field, field_validator

import lsm
from lsm.deploy.handler import Change
from lsm.deploy.jail import checked_path, read_at, write_at


class File(lsm.Resource, type="std::File", id_attribute="path"):
    """A regular file at an absolute ``path`` holding ``content`` (UTF-8) with ``mode``."""

    path: str
    content: str = ""
    mode: int = Field(0o644, ge=0, le=0o7777)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return checked_path(value, "std::File path")

    def autoedges(self) -> tuple[str | tuple[str, ...], ...]:
        """The ``std::Directory`` that holds it (else the nearest managed one above)."""
        return (_ancestors(self.agent, self.path),)


def _ancestors(agent: str, path: str) -> tuple[str, ...]:
    """The ``std::Directory`` ids of the folders above ``path``, nearest first."""
    return tuple(Directory.resource_id(agent, str(parent)) for parent in PurePosixPath(path).parents)


class Directory(lsm.Resource, type="std::Directory", id_attribute="path"):
    """A directory at an absolute ``path`` with permission bits ``mode``; its parent must exist."""

    path: str
    mode: int = Field(0o755, ge=0, le=0o7777)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return checked_path(value, "std::Directory path")

    def autoedges(self) -> tuple[str | tuple[str, ...], ...]:
        return (_ancestors(self.agent, self.path),)


class DirectoryHandler(lsm.CRUDHandler[Directory]):
    """Creates, chmods and removes (when empty) one directory, inside the agent's jail."""

    def read(self, ctx: lsm.HandlerContext, resource: Directory) -> Mapping[str, Any] | None:
        info = ctx.jail.stat(resource.path, who=resource.id)
        if info is None:
            return None
        if not stat.S_ISDIR(info.st_mode):
            raise lsm.HandlerError(f"{resource.id}: {resource.path} exists and is not a directory")
        return {"path": resource.path, "mode": stat.S_IMODE(info.st_mode)}

    def create(self, ctx: lsm.HandlerContext, resource: Directory) -> None:
        ctx.jail.make_directory(resource.path, resource.mode, who=resource.id)
        ctx.info("directory made", path=resource.path)

    def update(self, ctx: lsm.HandlerContext, resource: Directory, changes: Mapping[str, Change]) -> None:
        ctx.jail.make_directory(resource.path, resource.mode, who=resource.id)
        ctx.info("directory mode changed", path=resource.path, mode=oct(resource.mode))

    def delete(self, ctx: lsm.HandlerContext, resource: Directory) -> None:
        if ctx.jail.remove_directory(resource.path, who=resource.id):
            ctx.info("directory removed", path=resource.path)


class FileHandler(lsm.CRUDHandler[File]):
    """Reads, writes (atomically), chmods and removes one file, inside the agent's jail.

    Files of one directory are one group (``group_key``): ``deploy_group`` opens the directory
    once, through the jail, and reads and writes each member by name in it, so a group of N
    files walks the path once instead of twice per file. Each member is still deployed as
    ``CRUDHandler.deploy`` does it, with its own outcome.
    """

    def group_key(self, resource: File) -> str:
        """Files of one directory are deployed together (docs/semantics.md §5, ``autogroup``)."""
        return str(PurePosixPath(resource.path).parent)

    def deploy_group(self, members: Sequence[lsm.GroupMember[File]], *, dry_run: bool = False) -> None:
        first = members[0]
        folder = str(PurePosixPath(first.resource.path).parent)
        try:
            with first.ctx.jail.directory(folder, who=first.resource.id) as fd:
                _open.folder = (folder, fd)
                try:
                    super().deploy_group(members, dry_run=dry_run)
                finally:
                    _open.folder = None
        except lsm.HandlerError as exc:  # the directory is missing or out of bounds: each member fails
            for member in members:
                if member.error is None:
                    member.error = exc

    def read(self, ctx: lsm.HandlerContext, resource: File) -> Mapping[str, Any] | None:
        fd, name = _in_open_folder(resource.path)
        if fd is None:
            found = ctx.jail.read(resource.path, who=resource.id)
        else:
            try:
                found = read_at(fd, name, who=resource.id, shown=resource.path)
            except FileNotFoundError:
                found = None
        if found is None:
            return None
        data, info = found
        try:
            content: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            content = None  # not text: differs from any desired content, so it is rewritten
        return {"path": resource.path, "content": content, "mode": stat.S_IMODE(info.st_mode)}

    def _write(self, ctx: lsm.HandlerContext, resource: File) -> None:
        data = resource.content.encode("utf-8")
        fd, name = _in_open_folder(resource.path)
        if fd is None:
            ctx.jail.write(resource.path, data, resource.mode, who=resource.id)
            return
        ctx.jail.check_mode(resource.mode, who=resource.id)
        try:
            write_at(fd, name, data, resource.mode)
        except OSError as exc:
            raise lsm.HandlerError(f"{resource.id}: can not write {resource.path}: {exc.strerror}") from None

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


class _OpenFolder(threading.local):
    """The directory a group of this thread has open: ``(path, descriptor)``, or ``None``."""

    folder: tuple[str, int] | None = None


_open = _OpenFolder()


def _in_open_folder(path: str) -> tuple[int | None, str]:
    """``(descriptor, name)`` when ``path`` is in the folder this thread's group has open."""
    held = _open.folder
    pure = PurePosixPath(path)
    if held is not None and str(pure.parent) == held[0]:
        return held[1], pure.name
    return None, pure.name
