"""``HandlerThreads``: the threads that run an agent's handlers, replaced when one hangs.

Why not a ``ThreadPoolExecutor``: a handler that hangs (a target that never answers, a
socket read without a timeout) is failed after ``deploy_timeout``, but its thread can not be
killed and stays busy. In a fixed pool every hung handler took a thread for good: with as
many hung handlers as threads, the agent deployed nothing more, and the resources queued
behind them never even started, so their time limit never ran either.

Here a run that is given up on (``abandon``) is asked to stop (``lsm.interrupt.raise_in``:
Python code stops at its next bytecode) and its thread leaves the pool: a fresh thread takes
its place at once, and the old one ends whenever its call returns (its result is dropped).
So at most ``size`` handlers run that are still waited for, whatever hangs.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from lsm.interrupt import raise_in

log = logging.getLogger(__name__)

T = TypeVar("T")


class HandlerGivenUp(Exception):
    """Raised inside a handler's thread once its run was given up on (its time limit passed)."""


class HandlerThreads:
    """``size`` threads that run submitted calls; an abandoned call's thread is replaced."""

    def __init__(self, size: int, *, name: str = "lsm-handler") -> None:
        self.size = max(1, size)
        self.name = name
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: dict[Future[Any], threading.Thread] = {}
        self._abandoned: set[threading.Thread] = set()
        self._spawned = 0
        self._closed = False
        #: runs given up on so far, and those of them whose thread has not ended yet
        self.given_up = 0
        for _ in range(self.size):
            self._spawn()

    def submit(self, call: Callable[[], T]) -> Future[T]:
        """Run ``call`` on the next free thread; its future."""
        future: Future[T] = Future()
        self._queue.put((future, call))
        return future

    def abandon(self, future: Future[Any]) -> None:
        """Stop waiting for a running call: its thread is asked to stop and replaced now."""
        with self._lock:
            thread = self._running.pop(future, None)
            if thread is None or self._closed:
                return
            self._abandoned.add(thread)
            self.given_up += 1
        raise_in(thread, HandlerGivenUp)
        self._spawn()

    @property
    def lingering(self) -> int:
        """Threads of abandoned calls that have not ended yet."""
        with self._lock:
            return sum(1 for thread in self._abandoned if thread.is_alive())

    def shutdown(self) -> None:
        """Cancel what has not started; threads end after their current call."""
        with self._lock:
            self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in range(self.size):
            self._queue.put(None)

    # -- the threads -----------------------------------------------------------------------------------
    def _spawn(self) -> None:
        with self._lock:
            self._spawned += 1
            number = self._spawned
        threading.Thread(target=self._work, name=f"{self.name}-{number}", daemon=True).start()

    def _work(self) -> None:
        try:
            self._serve()
        except HandlerGivenUp:
            pass  # delivered after its call had returned: a fresh thread has its place already

    def _serve(self) -> None:
        me = threading.current_thread()
        while True:
            item = self._queue.get()
            if item is None:
                return
            future, call = item
            if not future.set_running_or_notify_cancel():
                continue
            with self._lock:
                self._running[future] = me
            try:
                result = call()
            except BaseException as exc:  # the caller reads it from the future (or dropped it)
                outcome: tuple[Any, BaseException | None] = (None, exc)
            else:
                outcome = (result, None)
            with self._lock:
                self._running.pop(future, None)
                abandoned = me in self._abandoned
                if abandoned:
                    self._abandoned.discard(me)
            if abandoned:
                log.info("%s: a handler given up on has ended; its result is dropped", me.name)
                return  # a fresh thread already took this one's place
            if outcome[1] is not None:
                future.set_exception(outcome[1])
            else:
                future.set_result(outcome[0])


__all__ = ["HandlerGivenUp", "HandlerThreads"]
