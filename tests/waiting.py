"""Waiting in tests for something another thread or process does: one helper, not a copy per file.

The bound is a liveness check (a deadlock or a lost wake-up fails the test instead of hanging
it), never a speed check: it is generous, and nothing asserts how soon the condition held.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: how long a condition may take before the test fails (seconds)
DEFAULT_SECONDS = 60.0


def wait_until(condition: Callable[[], object], what: str, *, seconds: float = DEFAULT_SECONDS) -> None:
    """Poll ``condition`` until it is true; fail the test, naming ``what``, after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened within {seconds:g} s: {what}")
        time.sleep(0.005)
