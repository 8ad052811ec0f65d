"""``raise_in(thread, exc)``: stop Python code running in another thread.

Why: the engine's part of a compile (and a model built in code rather than loaded from a
source, refined in the calling thread) or a deploy handler that overruns its time limit runs in
a thread of ours, and Python has no way to kill a thread; a loaded model's code runs in a compile
process, which is killed instead (``lsm.compiler.isolation``). ``PyThreadState_SetAsyncExc`` raises ``exc``
in that thread at its next bytecode: an endless loop in Python stops there, and ``with`` and
``finally`` blocks on its way out still run. Code blocked inside C (a socket read without a
timeout, a lock) sees it only when the call returns; callers therefore also stop waiting for
such a thread and let it end on its own (``lsm.services.loop``, ``lsm.deploy.handler_threads``).
"""

from __future__ import annotations

import ctypes
import threading


def raise_in(thread: threading.Thread, exc: type[BaseException]) -> None:
    """Raise ``exc`` in ``thread`` at its next bytecode (nothing if it never started)."""
    if thread.ident is None:
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(exc))


__all__ = ["raise_in"]
