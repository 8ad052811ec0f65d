"""The jail of handlers: files and URLs only under the roots the operator configured for the agent.

Why: a handler runs with the agent's rights (often root), and its paths and URLs come from
resources, which come from orders. Without a jail an operator who may order a ``std::File``
could read ``/etc/shadow`` through a discovery (then shown to every viewer), write a setuid
binary or delete any file of the agent's host. Every bundled handler acts through this one
helper, and a handler author's handler should too (``ctx.jail``, docs/handlers.md §3):

* **paths** are resolved first (``..`` and symbolic links, ``os.path.realpath``), then checked
  to lie under one of ``roots`` (default: the agent's state directory). A path whose link
  leads out of the roots is refused, whatever it is called.
* **no race** between that check and the use: the resolved path is opened again from its root,
  one directory at a time with ``O_NOFOLLOW``, and the file itself with ``O_NOFOLLOW`` relative
  to its directory. A component swapped for a symbolic link after the check fails the open
  (``ELOOP``/``ENOTDIR``) instead of leading out.
* **permission bits**: setuid, setgid and sticky are refused unless the agent allows them
  (``special_bits``), so an order can not make a program that runs as the agent's user.
* **URLs** must start with one of ``urls`` (scheme, host, port and a path prefix); none are
  allowed unless configured, so an order can not make the agent reach its own network.

Errors are ``HandlerError`` naming the resource, the path or URL, and the setting that would
allow it, so the deploy fails with a reason an operator can act on.
"""

from __future__ import annotations

import errno
import itertools
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from lsm.deploy.handler import HandlerError
from lsm.schemas.limits import MAX_FILE_NAME_BYTES, MAX_PATH_BYTES

#: permission bits that make a file run as its owner or group, or restrict deletion in a folder
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Jail:
    """Where handlers may act: directories (resolved), URL prefixes, and the special bits rule."""

    roots: tuple[Path, ...]
    urls: tuple[str, ...] = ()
    special_bits: bool = False

    @classmethod
    def of(cls, roots: Iterable[str | Path], urls: Iterable[str] = (), special_bits: bool = False) -> Jail:
        """A jail over ``roots`` (resolved now: a root may itself be a link) and URL prefixes."""
        return cls(
            tuple(Path(os.path.realpath(root)) for root in roots),
            tuple(str(httpx.URL(url)) for url in urls),
            special_bits,
        )

    # -- paths ----------------------------------------------------------------------------------
    def resolve(self, path: str | Path, *, who: str) -> tuple[Path, Path]:
        """``(root, resolved path)`` of an absolute ``path`` under a root, else ``HandlerError``."""
        text = str(path)
        if "\0" in text or not os.path.isabs(text):
            raise HandlerError(f"{who}: path {text!r} is not an absolute path")
        resolved = Path(os.path.realpath(text))
        for root in self.roots:
            if resolved == root or root in resolved.parents:
                return root, resolved
        shown = f"{text} (which resolves to {resolved})" if str(resolved) != os.path.normpath(text) else text
        raise HandlerError(
            f"{who}: {shown} is outside the directories this agent's handlers may use "
            f"({', '.join(map(str, self.roots)) or 'none'}; setting handler_roots)"
        )

    @contextmanager
    def directory(self, path: str | Path, *, who: str) -> Iterator[int]:
        """A descriptor of directory ``path`` (under a root), opened without following any link."""
        try:
            with self._directory(path, who) as fd:
                yield fd
        except _MissingFolder:
            raise HandlerError(f"{who}: {path} is not a directory: it does not exist") from None

    @contextmanager
    def _directory(self, path: str | Path, who: str) -> Iterator[int]:
        root, resolved = self.resolve(path, who=who)
        with _walk(root, resolved, who) as fd:
            yield fd

    @contextmanager
    def parent(self, path: str | Path, *, who: str) -> Iterator[tuple[int, str]]:
        """``(descriptor of the folder, file name)`` of a file ``path`` under a root."""
        root, resolved = self.resolve(path, who=who)
        if resolved == root:
            raise HandlerError(f"{who}: {path} is a root directory of the agent, not a file")
        with _walk(root, resolved.parent, who) as fd:
            yield fd, resolved.name

    def stat(self, path: str | Path, *, who: str) -> os.stat_result | None:
        """The ``lstat`` of ``path`` (``None`` when it or its folder does not exist)."""
        try:
            with self.parent(path, who=who) as (fd, name):
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, _MissingFolder):
            return None
        except OSError as exc:
            raise HandlerError(f"{who}: can not stat {path}: {exc.strerror}") from None

    def read(
        self, path: str | Path, *, who: str, max_size: int | None = None
    ) -> tuple[bytes, os.stat_result] | None:
        """Content and status of the regular file ``path``; ``None`` when missing.

        Raises ``HandlerError`` for anything but a regular file, or one larger than ``max_size``.
        """
        try:
            with self.parent(path, who=who) as (dir_fd, name):
                return read_at(dir_fd, name, who=who, shown=str(path), max_size=max_size)
        except (FileNotFoundError, _MissingFolder):
            return None

    def write(self, path: str | Path, data: bytes, mode: int, *, who: str) -> None:
        """Replace file ``path`` by ``data`` with ``mode``: a new file renamed over it (atomic)."""
        self.check_mode(mode, who=who)
        with self._in_folder(path, who) as (fd, name):
            write_at(fd, name, data, mode)

    def make_directory(self, path: str | Path, mode: int, *, who: str) -> None:
        """Create directory ``path`` with ``mode`` (its parent must exist), or set the mode of
        the directory already there (never through a link)."""
        self.check_mode(mode, who=who)
        with self._in_folder(path, who) as (fd, name):
            try:
                os.mkdir(name, 0o700, dir_fd=fd)
            except FileExistsError:
                pass
            target = os.open(name, _DIR_FLAGS, dir_fd=fd)
            try:
                os.fchmod(target, mode)
            finally:
                os.close(target)

    def remove_directory(self, path: str | Path, *, who: str) -> bool:
        """Remove the empty directory ``path``; ``False`` when it was not there."""
        try:
            with self.parent(path, who=who) as (fd, name):
                os.rmdir(name, dir_fd=fd)
        except (FileNotFoundError, _MissingFolder):
            return False
        except OSError as exc:
            raise HandlerError(f"{who}: can not remove directory {path}: {exc.strerror}") from None
        return True

    def chmod(self, path: str | Path, mode: int, *, who: str) -> None:
        """Set the permission bits of the regular file ``path`` (never through a link)."""
        self.check_mode(mode, who=who)
        with self._in_folder(path, who) as (fd, name):
            target = os.open(name, _READ_FLAGS, dir_fd=fd)
            try:
                if not stat.S_ISREG(os.fstat(target).st_mode):
                    raise HandlerError(f"{who}: {path} is not a regular file")
                os.fchmod(target, mode)
            finally:
                os.close(target)

    def remove(self, path: str | Path, *, who: str) -> bool:
        """Remove file ``path``; ``False`` when it was not there."""
        try:
            with self.parent(path, who=who) as (fd, name):
                os.unlink(name, dir_fd=fd)
        except (FileNotFoundError, _MissingFolder):
            return False
        except OSError as exc:
            raise HandlerError(f"{who}: can not remove {path}: {exc.strerror}") from None
        return True

    @contextmanager
    def _in_folder(self, path: str | Path, who: str) -> Iterator[tuple[int, str]]:
        """``parent`` for writes: an ``OSError`` becomes a ``HandlerError`` naming the path."""
        try:
            with self.parent(path, who=who) as pair:
                yield pair
        except _MissingFolder:
            raise HandlerError(f"{who}: directory {Path(path).parent} does not exist") from None
        except OSError as exc:
            raise HandlerError(f"{who}: can not write {path}: {exc.strerror}") from None

    def check_mode(self, mode: int, *, who: str) -> int:
        """``mode``, or ``HandlerError`` when it has setuid/setgid/sticky bits the agent forbids."""
        if mode & SPECIAL_BITS and not self.special_bits:
            raise HandlerError(
                f"{who}: mode {oct(mode)} sets setuid, setgid or sticky bits, which this agent does not "
                "allow (setting handler_special_bits)"
            )
        return mode

    # -- URLs -----------------------------------------------------------------------------------
    def url(self, url: str, *, who: str) -> str:
        """``url`` when it starts with an allowed prefix (scheme, host, port, path), else refused."""
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise HandlerError(f"{who}: {url!r} is not a URL: {exc}") from None
        for allowed in self.urls:
            if _under(parsed, httpx.URL(allowed)):
                return url
        raise HandlerError(
            f"{who}: {url} is not under a URL this agent's handlers may reach "
            f"({', '.join(self.urls) or 'none configured'}; setting handler_url_roots)"
        )


def checked_path(value: str, what: str) -> str:
    """``value`` normalized, or ``ValueError`` naming ``what`` and the limit it breaks: for the
    validator of a resource's path field, so a path no file system holds fails the compile that
    made it (absolute, no NUL, each name part and the whole within the limits of Linux)."""
    if "\0" in value:
        raise ValueError(f"{what} contains a NUL byte")
    if not os.path.isabs(value):
        raise ValueError(f"{what} {value!r} is relative: give an absolute path")
    path = os.path.normpath(value)
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > MAX_PATH_BYTES:
        raise ValueError(f"{what} is {size} bytes long; a path holds at most {MAX_PATH_BYTES} bytes")
    for part in path.split("/"):
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > MAX_FILE_NAME_BYTES:
            raise ValueError(
                f"{what} has a name of {size} bytes ({part[:40]}...); a file name holds at most "
                f"{MAX_FILE_NAME_BYTES} bytes"
            )
    return path


#: numbers of temporary files (``itertools.count`` is thread-safe in CPython: one C call)
_TEMP_NUMBERS = itertools.count()


def write_at(dir_fd: int, name: str, data: bytes, mode: int) -> None:
    """Replace file ``name`` of folder ``dir_fd`` by ``data`` with ``mode`` (a temporary file
    renamed over it: atomic). The caller checked the folder and the mode (``Jail.write``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    # short, so any valid name still fits beside it; unique per process and write (no entropy
    # read per file: on some hosts that cost as much as the write), a random one on a clash
    temp = f".lsm-{os.getpid():x}-{next(_TEMP_NUMBERS):x}.tmp"
    try:
        out = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        temp = f".lsm-{secrets.token_hex(6)}.tmp"
        out = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(out, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fchmod(stream.fileno(), mode)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise


class _MissingFolder(Exception):
    """A folder on the way to a path does not exist (the path is then missing too)."""


def read_at(
    dir_fd: int, name: str, *, who: str, shown: str, max_size: int | None = None
) -> tuple[bytes, os.stat_result]:
    """Read the regular file ``name`` of folder ``dir_fd`` without following a link or blocking
    on a FIFO; ``HandlerError`` for anything else or when larger than ``max_size``."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise HandlerError(f"{who}: {shown} is a symbolic link (refused: it could lead out)") from None
        if isinstance(exc, FileNotFoundError):
            raise
        raise HandlerError(f"{who}: can not open {shown}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HandlerError(f"{who}: {shown} exists and is not a regular file")
        if max_size is not None and info.st_size > max_size:
            raise HandlerError(f"{who}: {shown} is larger than {max_size} bytes")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), info
    except OSError as exc:
        raise HandlerError(f"{who}: can not read {shown}: {exc.strerror}") from None
    finally:
        os.close(fd)


@contextmanager
def _walk(root: Path, resolved: Path, who: str) -> Iterator[int]:
    """Open ``resolved`` (a folder under ``root``) one part at a time, never through a link."""
    fd = _open_root(root, who)
    try:
        for part in resolved.relative_to(root).parts:
            inner = _step(fd, part, resolved, who)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _open_root(root: Path, who: str) -> int:
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise _MissingFolder() from None
    except OSError as exc:
        raise HandlerError(f"{who}: can not open the agent's root {root}: {exc.strerror}") from None


def _step(fd: int, part: str, resolved: Path, who: str) -> int:
    """Open folder ``part`` of ``fd``, refusing a link put there since the check."""
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        raise _MissingFolder() from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise HandlerError(
                f"{who}: {part} of {resolved} is not a directory (or became a link while it was opened)"
            ) from None
        raise HandlerError(f"{who}: can not open {resolved}: {exc.strerror}") from None


def _under(url: httpx.URL, prefix: httpx.URL) -> bool:
    if (url.scheme, url.host, url.port) != (prefix.scheme, prefix.host, prefix.port):
        return False
    base = prefix.path if prefix.path.endswith("/") else prefix.path + "/"
    return url.path == prefix.path or url.path.startswith(base) or base == "/"


__all__ = ["SPECIAL_BITS", "Jail", "checked_path", "read_at", "write_at"]
