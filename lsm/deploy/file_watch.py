"""``FileWatcher``: one inotify instance per agent process, shared by every watched file.

Why one instance and directory watches: the kernel limits inotify instances per user (often
128) far more tightly than watches, and each instance is a file descriptor and a buffer. So an
agent opens ONE instance (``inotify_simple``: a thin ctypes wrapper, no thread or loop of its
own) and watches the *directory* of each file, not the file: a file written the safe way (a
temporary file renamed over it, as the bundled file handler and most editors do) is a new
inode, which a watch on the old inode would never see again. Many files in one directory cost
one kernel watch; a name map sends each event to the callbacks of that name.

One thread reads the instance (``poll`` on its descriptor and on a pipe that wakes it to stop),
so an idle agent with 10,000 watched files costs no CPU at all. Callbacks run on that thread and
must be quick (the engine's only queues the resource id). Events:

* a change to the name (written, closed after writing, moved in or out, created, deleted,
  its bits changed): ``changed`` of every callback of that name;
* the kernel's queue overflowed (events were lost): ``changed`` of every callback;
* the directory itself went (removed, moved, unmounted): ``changed`` then ``lost`` of every
  callback of it, so that the engine checks the files and starts the watch again later
  (under the resource's ``retry``/``delay``) once the directory is back.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from inotify_simple import INotify, flags

log = logging.getLogger(__name__)

#: what changes a file's content, bits or existence, seen from its directory
MASK = (
    flags.MODIFY
    | flags.CLOSE_WRITE
    | flags.ATTRIB
    | flags.CREATE
    | flags.DELETE
    | flags.MOVED_FROM
    | flags.MOVED_TO
    | flags.DELETE_SELF
    | flags.MOVE_SELF
    | flags.ONLYDIR
)
#: the directory watch is gone (``IGNORED`` follows the others)
_GONE = flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF | flags.UNMOUNT


@dataclass(eq=False)
class _Callback:
    changed: Callable[[], None]
    lost: Callable[[OSError], None]


@dataclass
class _Folder:
    path: Path
    wd: int
    names: dict[str, list[_Callback]] = field(default_factory=dict)


class FileWatcher:
    """Watches files for an agent process; ``watch`` returns the function that stops one watch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inotify: INotify | None = None
        self._folders: dict[Path, _Folder] = {}
        self._by_wd: dict[int, _Folder] = {}
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1
        self._closed = False

    def watch(
        self, path: str | Path, changed: Callable[[], None], lost: Callable[[OSError], None]
    ) -> Callable[[], None]:
        """Call ``changed`` whenever the file at ``path`` (absolute, resolved) may have changed,
        ``lost`` when its directory went; raises ``OSError`` when the directory can not be
        watched (missing, not a directory, the kernel's watch limit reached)."""
        target = Path(path)
        folder_path, name = target.parent, target.name
        callback = _Callback(changed, lost)
        with self._lock:
            if self._closed:
                raise OSError(f"the file watcher of this agent is stopped ({target})")
            inotify = self._start()
            folder = self._folders.get(folder_path)
            if folder is None:
                wd = inotify.add_watch(str(folder_path), MASK)
                folder = self._by_wd.get(wd) or _Folder(folder_path, wd)
                self._folders[folder_path] = folder
                self._by_wd[wd] = folder
            folder.names.setdefault(name, []).append(callback)

        def stop() -> None:
            self._forget(folder_path, name, callback)

        return stop

    def watched(self) -> int:
        """How many file watches are registered (the kernel holds one per directory)."""
        with self._lock:
            return sum(len(c) for f in self._folders.values() for c in f.names.values())

    def close(self) -> None:
        """Stop the reading thread and close the instance; later ``watch`` calls raise."""
        with self._lock:
            self._closed = True
            thread, inotify = self._thread, self._inotify
            if thread is not None:
                os.write(self._wake_w, b"x")
        if thread is not None:
            thread.join(timeout=5)
        with self._lock:
            if inotify is not None:
                inotify.close()
                os.close(self._wake_r)
                os.close(self._wake_w)
            self._inotify, self._thread = None, None
            self._folders.clear()
            self._by_wd.clear()

    # -- inside -----------------------------------------------------------------------------------
    def _start(self) -> INotify:
        if self._inotify is None:
            self._inotify = INotify()
            self._wake_r, self._wake_w = os.pipe()
            self._thread = threading.Thread(target=self._read_loop, name="lsm-file-watch", daemon=True)
            self._thread.start()
        return self._inotify

    def _forget(self, folder_path: Path, name: str, callback: _Callback) -> None:
        with self._lock:
            folder = self._folders.get(folder_path)
            if folder is None:
                return
            callbacks = folder.names.get(name, [])
            if callback in callbacks:
                callbacks.remove(callback)
            if not callbacks:
                folder.names.pop(name, None)
            if folder.names:
                return
            del self._folders[folder_path]
            self._by_wd.pop(folder.wd, None)
            if self._inotify is not None:
                try:
                    self._inotify.rm_watch(folder.wd)
                except OSError:
                    pass  # the kernel dropped it already (the directory went)

    def _read_loop(self) -> None:
        with self._lock:
            inotify, wake = self._inotify, self._wake_r
        assert inotify is not None
        poller = select.poll()
        poller.register(inotify.fileno(), select.POLLIN)
        poller.register(wake, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if wake in ready:
                return
            try:
                events = inotify.read(timeout=0)
            except OSError as exc:  # the instance was closed under us
                log.warning("the file watcher stopped reading: %s", exc)
                return
            self._dispatch(events)

    def _dispatch(self, events: list[object]) -> None:
        changed: list[_Callback] = []
        lost: list[_Callback] = []
        with self._lock:
            for event in events:
                wd, mask, name = event.wd, event.mask, event.name  # type: ignore[attr-defined]  # inotify_simple's Event namedtuple is untyped
                if mask & flags.Q_OVERFLOW:
                    changed.extend(c for f in self._folders.values() for cs in f.names.values() for c in cs)
                    continue
                folder = self._by_wd.get(wd)
                if folder is None:
                    continue
                if mask & _GONE:
                    everyone = [c for cs in folder.names.values() for c in cs]
                    changed.extend(everyone)
                    lost.extend(everyone)
                    self._by_wd.pop(wd, None)
                    if self._folders.get(folder.path) is folder:
                        del self._folders[folder.path]
                    continue
                changed.extend(folder.names.get(name, ()))
        for callback in dict.fromkeys(changed):
            _safely(callback.changed)
        for callback in dict.fromkeys(lost):
            _safely(partial(callback.lost, OSError("the watched directory was removed or moved")))


def _safely(fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # a callback's bug must not stop the watches of every other file
        log.exception("a file watch callback failed")


__all__ = ["FileWatcher"]
