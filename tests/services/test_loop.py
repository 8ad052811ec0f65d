"""The service loop: time limits stop runaway work, stuck threads are replaced, shutdown gives work back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lsm.errors import TimeLimitExceeded
from lsm.services import ServiceLoop, Work


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


@dataclass(eq=False)
class Job:
    label: str
    body: Callable[[Job], object]
    limit: float | None = None
    started: float | None = None
    outcome: str | None = None
    expired: bool = False
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        self.started = time.monotonic()
        try:
            self.body(self)
            self.outcome = "ok"
        except TimeLimitExceeded:
            self.outcome = "timeout"
        finally:
            self.done.set()

    def deadline(self) -> float | None:
        return None if self.limit is None or self.started is None else self.started + self.limit

    def expire(self) -> None:
        self.expired = True


class Source:
    name = "jobs"

    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = list(jobs)
        self.beats: list[list[str]] = []
        self.released: list[str] = []
        self._lock = threading.Lock()

    def claim(self) -> Work | None:
        with self._lock:
            return self.jobs.pop(0) if self.jobs else None

    def heartbeat(self, running: Sequence[Work]) -> None:
        self.beats.append([w.label for w in running])

    def release(self, running: Sequence[Work]) -> None:
        self.released.extend(w.label for w in running)


def spin_forever(job: Job) -> None:
    while True:
        pass


def test_an_endless_loop_is_stopped_at_its_time_limit_while_other_work_goes_on() -> None:
    runaway = Job("runaway", spin_forever, limit=0.3)
    others = [Job(f"quick-{i}", lambda job: None) for i in range(20)]
    source = Source([runaway, *others])
    loop = ServiceLoop([source], threads=2, poll_interval=0.05, heartbeat_interval=0.1)
    loop.start()
    try:
        assert wait_for(lambda: all(j.done.is_set() for j in others))
        assert wait_for(runaway.done.is_set)
    finally:
        loop.stop(timeout=5)
    assert runaway.outcome == "timeout"
    assert not runaway.expired
    assert {j.outcome for j in others} == {"ok"}


def test_work_stuck_outside_python_is_expired_and_its_thread_replaced() -> None:
    release = threading.Event()
    stuck = Job("stuck", lambda job: release.wait(), limit=0.2)  # blocked in C: no async exception
    later = Job("later", lambda job: None)
    source = Source([stuck])
    loop = ServiceLoop([source], threads=1, poll_interval=0.05, heartbeat_interval=0.1, grace=0.2)
    loop.start()
    try:
        assert wait_for(lambda: stuck.expired)
        source.jobs.append(later)  # the only thread is stuck: a replacement must run this
        loop.wake()
        assert wait_for(later.done.is_set)
    finally:
        release.set()
        loop.stop(timeout=5)
    assert later.outcome == "ok"


def test_running_work_gets_heartbeats_and_is_given_back_on_shutdown() -> None:
    hold = threading.Event()
    long = Job("long", lambda job: hold.wait(10))
    source = Source([long])
    loop = ServiceLoop([source], threads=1, poll_interval=0.05, heartbeat_interval=0.05)
    loop.start()
    try:
        assert wait_for(lambda: any("long" in beat for beat in source.beats))
    finally:
        loop.stop(timeout=0.2)  # it does not finish in time: it is given back
        hold.set()
    assert source.released == ["long"]


def test_drain_runs_everything_in_the_calling_thread() -> None:
    ran: list[str] = []
    jobs = [Job(f"j{i}", lambda job: ran.append(threading.current_thread().name)) for i in range(5)]
    loop = ServiceLoop([Source(jobs)])
    assert loop.drain() == 5
    assert ran == [threading.current_thread().name] * 5
