"""``ChangeSignal``: wakes async waiters in this process when instances or compiles changed.

Why: a ``wait`` compile request and the ``/api/v1/events`` stream must answer as soon as a
compile finishes, without holding a thread while they wait. Changes made in this process
(the orchestration's commits, the embedded compile processing) ``notify``; waiters, in any
event loop, ``await`` a ``listener``. Changes made by another process (an ``lsm worker``) are
not heard: waiters bound every wait by a short poll interval and look at the database again.

A listener is registered BEFORE the caller looks at the database, so a change that lands
between the look and the wait still wakes it (no lost wake-up)::

    with signal.listener() as heard:
        if await look():            # the database, in a worker thread
            return
        await heard.wait(poll_interval)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Listener:
    """One registration: ``wait`` returns when notified since it was made, or after ``timeout``."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.heard = asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """Whether a change was heard (``False``: the timeout passed first)."""
        try:
            await asyncio.wait_for(self.heard.wait(), timeout)
        except TimeoutError:
            return False
        return True


class ChangeSignal:
    """Thread-safe: ``notify`` from any thread, listen from any event loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: set[Listener] = set()

    @property
    def listening(self) -> int:
        """How many listeners are registered (open streams and waiting requests of this process)."""
        with self._lock:
            return len(self._listeners)

    def notify(self, _env_id: str | None = None) -> None:
        """Something changed (in ``_env_id``): wake every listener."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener.loop.call_soon_threadsafe(listener.heard.set)
            except RuntimeError:  # its loop is closed: the listener is going away
                pass

    @contextmanager
    def listener(self) -> Iterator[Listener]:
        """Register a listener for the duration of the block (inside a running event loop)."""
        listener = Listener()
        with self._lock:
            self._listeners.add(listener)
        try:
            yield listener
        finally:
            with self._lock:
                self._listeners.discard(listener)
