"""The in-process turns at SQLite's write lock (``lsm.store.write_gate``).

Orderings are checked with every waiter known to be waiting (``WriteGate.waiting``) before the
holder lets go, so no test depends on how fast a thread starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsm.store.write_gate import WriteGate

LONG = 60.0


def _wait_until(condition: Callable[[], object], what: str) -> None:
    """Poll ``condition()`` (bounded by a count, not asserted on time)."""
    for _ in range(10_000):
        if condition():
            return
        time.sleep(0.001)
    raise AssertionError(f"never happened: {what}")


def _writer(gate: WriteGate, name: str, urgent: bool, order: list[str]) -> threading.Thread:
    def run() -> None:
        assert gate.acquire(urgent=urgent, timeout=LONG)
        order.append(name)
        gate.release()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def test_reentrant_in_one_thread_and_exclusive_across_threads() -> None:
    gate = WriteGate()
    assert gate.acquire(urgent=False, timeout=LONG)
    assert gate.acquire(urgent=True, timeout=LONG)  # a nested write does not wait for itself
    got: list[bool] = []
    other = threading.Thread(target=lambda: got.append(gate.acquire(urgent=True, timeout=0.05)))
    other.start()
    other.join()
    assert got == [False]  # still held: the timeout is the answer, as SQLite's busy timeout was
    gate.release()
    other = threading.Thread(target=lambda: got.append(gate.acquire(urgent=True, timeout=0.05)))
    other.start()
    other.join()
    assert got == [False, False]  # held once more: the outer write
    gate.release()
    assert gate.acquire(urgent=False, timeout=0.05)
    gate.release()
    assert gate.waiting() == (0, 0)


def _turns(patience: float) -> list[str]:
    """Who goes first when the gate is let go with a background writer waiting (it came first)
    and an urgent one waiting after it."""
    gate = WriteGate(patience=patience)
    order: list[str] = []
    assert gate.acquire(urgent=True, timeout=LONG)
    background = _writer(gate, "background", False, order)
    _wait_until(lambda: gate.waiting() == (0, 1), "the background writer waits")
    urgent = _writer(gate, "urgent", True, order)
    _wait_until(lambda: gate.waiting() == (1, 1), "both wait")
    gate.release()
    urgent.join()
    background.join()
    return order


def test_urgent_writers_go_before_background_writers_that_came_first() -> None:
    assert _turns(patience=LONG) == ["urgent", "background"]


def test_a_background_writer_past_its_patience_goes_before_urgent_ones() -> None:
    assert _turns(patience=0.0) == ["background", "urgent"]


def test_only_the_holder_releases() -> None:
    gate = WriteGate()
    with pytest.raises(RuntimeError):
        gate.release()
    assert gate.acquire(urgent=False, timeout=LONG)
    errors: list[BaseException] = []

    def foreign_release() -> None:
        try:
            gate.release()
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=foreign_release)
    thread.start()
    thread.join()
    assert len(errors) == 1
    gate.release()


@settings(max_examples=25, deadline=None)
@given(
    kinds=st.lists(st.booleans(), min_size=2, max_size=8),
    rounds=st.integers(min_value=1, max_value=20),
    patience=st.sampled_from([0.0, 0.001, LONG]),
)
def test_never_two_holders_and_every_writer_gets_its_turns(
    kinds: list[bool], rounds: int, patience: float
) -> None:
    gate = WriteGate(patience=patience)
    inside = 0
    most_inside = 0
    turns = [0] * len(kinds)
    guard = threading.Lock()
    failures: list[str] = []

    def run(index: int, urgent: bool) -> None:
        nonlocal inside, most_inside
        for _ in range(rounds):
            if not gate.acquire(urgent=urgent, timeout=LONG):
                failures.append(f"writer {index} timed out")
                return
            with guard:
                inside += 1
                most_inside = max(most_inside, inside)
            turns[index] += 1
            with guard:
                inside -= 1
            gate.release()

    threads = [threading.Thread(target=run, args=(i, urgent)) for i, urgent in enumerate(kinds)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert most_inside == 1
    assert turns == [rounds] * len(kinds)
    assert gate.waiting() == (0, 0)
