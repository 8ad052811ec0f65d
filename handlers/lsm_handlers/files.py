"""``std::File``: a file with a given content and permission bits.

Why this shape: it is the smallest handler that changes something real, so it is the one the
docs and the engine tests use. ``read`` reports what is on disk (content and mode, ``None`` when
the file is missing); ``create`` and ``update`` write a temporary file and rename it over the
target, so no reader ever sees half a file; an update that changes only ``mode`` is a
``chmod``, not a rewrite. A relative path is refused where the resource is built: the agent's
working directory is nobody's business.

The parent directory must exist (model it with another resource, or keep files where one
exists): creating directories nobody purges would leave debris behind.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

import lsm
from lsm.deploy.handler import Change, HandlerError
from lsm_handlers._atomic import atomic_write


class File(lsm.Resource, type="std::File", id_attribute="path"):
    """A regular file at an absolute ``path`` holding ``content`` (UTF-8) with ``mode``."""

    path: str
    content: str = ""
    mode: int = Field(0o644, ge=0, le=0o7777)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not os.path.isabs(value):
            raise ValueError(f"std::File path {value!r} is relative: give an absolute path")
        if "\0" in value:
            raise ValueError("std::File path contains a NUL byte")
        return os.path.normpath(value)


class FileHandler(lsm.CRUDHandler[File]):
    """Reads, writes (atomically), chmods and removes one file."""

    def _path(self, resource: File) -> Path:
        path = Path(resource.path)
        if not path.is_absolute():  # a File built without validation (model_construct)
            raise HandlerError(f"{resource.id}: path {resource.path!r} is relative")
        return path

    def read(self, ctx: lsm.HandlerContext, resource: File) -> Mapping[str, Any] | None:
        path = self._path(resource)
        try:
            info = path.lstat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not stat {path}: {exc.strerror}") from None
        if not stat.S_ISREG(info.st_mode):
            raise HandlerError(f"{resource.id}: {path} exists and is not a regular file")
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not read {path}: {exc.strerror}") from None
        try:
            content: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            content = None  # not text: differs from any desired content, so it is rewritten
        return {"path": resource.path, "content": content, "mode": stat.S_IMODE(info.st_mode)}

    def _write(self, resource: File) -> None:
        path = self._path(resource)
        if not path.parent.is_dir():
            raise HandlerError(f"{resource.id}: directory {path.parent} does not exist")
        try:
            atomic_write(path, resource.content.encode("utf-8"), resource.mode)
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not write {path}: {exc.strerror}") from None

    def create(self, ctx: lsm.HandlerContext, resource: File) -> None:
        self._write(resource)
        ctx.info("file written", path=resource.path, bytes=len(resource.content.encode("utf-8")))

    def update(self, ctx: lsm.HandlerContext, resource: File, changes: Mapping[str, Change]) -> None:
        if "content" in changes:
            self._write(resource)  # writes the mode too
            ctx.info("file rewritten", path=resource.path)
            return
        if "mode" in changes:
            path = self._path(resource)
            try:
                os.chmod(path, resource.mode)
            except OSError as exc:
                raise HandlerError(f"{resource.id}: can not chmod {path}: {exc.strerror}") from None
            ctx.info("file mode changed", path=resource.path, mode=oct(resource.mode))

    def delete(self, ctx: lsm.HandlerContext, resource: File) -> None:
        path = self._path(resource)
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise HandlerError(f"{resource.id}: can not remove {path}: {exc.strerror}") from None
        ctx.info("file removed", path=resource.path)
