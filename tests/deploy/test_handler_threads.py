"""``HandlerThreads``: calls run on a fixed number of threads; a call given up on is stopped if
it runs Python code, and its thread is replaced at once either way."""

from __future__ import annotations

import threading

import pytest

from lsm.deploy.handler_threads import HandlerGivenUp, HandlerThreads
from tests.waiting import wait_until


def test_a_call_in_an_endless_python_loop_is_stopped_and_its_thread_replaced() -> None:
    threads = HandlerThreads(1)
    started = threading.Event()
    stopped: list[BaseException] = []

    def spin() -> None:
        started.set()
        try:
            while True:
                pass
        except HandlerGivenUp as exc:
            stopped.append(exc)
            raise

    spinning = threads.submit(spin)
    started.wait()
    after = threads.submit(lambda: "ran")
    threads.abandon(spinning)
    assert after.result(timeout=60) == "ran"  # on the replacement thread
    wait_until(lambda: threads.lingering == 0, "the spinning thread ends")
    assert len(stopped) == 1 and threads.given_up == 1
    assert not spinning.done()  # its caller stopped waiting: nothing is set on it any more
    threads.shutdown()


def test_errors_reach_the_caller_and_shutdown_cancels_what_has_not_started() -> None:
    threads = HandlerThreads(1)
    gate = threading.Event()

    def fail() -> None:
        raise ValueError("handler error")

    with pytest.raises(ValueError, match="handler error"):
        threads.submit(fail).result(timeout=60)
    blocking = threads.submit(gate.wait)
    wait_until(lambda: blocking.running(), "the blocking call runs")
    queued = threads.submit(lambda: "never")
    threads.shutdown()
    assert queued.cancelled()
    gate.set()
    assert blocking.result(timeout=60) is True
