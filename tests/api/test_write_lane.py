"""The write lane (``lsm.api.write_lane``): a burst of changes waiting for their commit leaves
the reads their threads, over real HTTP (uvicorn on 127.0.0.1).

The group-commit writer is held on a gate (a work item that waits) while more changes than the
default thread pool has threads (40) are sent, so every one of them is sure to be waiting when
the read is made; nothing waits on luck.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from lsm.api.write_lane import DOOR_PLACES, ChangeAdmission
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from lsm.testing import served_url
from tests.orchestration.helpers import Driver, gated
from tests.waiting import wait_until

WAIT_S = 60.0
#: more than the default pool's 40 threads, no more than the lane's 64
CHANGES = 50


def test_a_read_answers_while_a_burst_of_changes_waits_for_its_commit(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(config={"group_commit": True})
    group = engine.orchestrator.group
    assert group is not None
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(CHANGES)]
    answers: dict[str, int] = {}
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=WAIT_S) as http:
        senders = _senders(http, things, answers)
        try:
            with gated(group):
                _start(senders)
                wait_until(lambda: group._queue.qsize() >= CHANGES, f"{CHANGES} changes waiting")
                read = http.get(f"/lsm/v1/service_inventory/thing/{things[0].id}")
                assert read.status_code == 200
                assert read.json()["version"] == things[0].version  # read while its change still waits
                assert not answers  # every change is still waiting for the gate
        finally:
            _join(senders)

    assert answers == {t.id: 200 for t in things}
    assert all(driver.get(t).version == t.version + 1 for t in things)


def test_changes_beyond_a_batch_wait_at_the_door_unparsed_and_all_land(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """More changes than the door lets in: two batches' worth are inside (queued behind the gated
    writer), the rest wait at the door before anything is done for them; a read still answers;
    once the writer goes on, every change lands."""
    engine = engine_factory(config={"group_commit": True})
    group = engine.orchestrator.group
    assert group is not None
    driver = Driver(engine)
    beyond = 3
    things = [driver.reach("up") for _ in range(DOOR_PLACES + beyond)]
    answers: dict[str, int] = {}
    limits = httpx.Limits(max_connections=len(things) + 1)  # every PATCH on its own connection
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=WAIT_S, limits=limits) as http:
        assert http.get("/health").status_code == 200  # the app's middleware stack is built
        door = _door(engine)

        senders = _senders(http, things, answers)
        try:
            with gated(group):
                _start(senders)
                wait_until(
                    lambda: door.counts() == (DOOR_PLACES, beyond),
                    f"{DOOR_PLACES} changes inside, {beyond} at the door",
                )
                wait_until(lambda: group._queue.qsize() >= DOOR_PLACES, "two batches queued")
                assert group._queue.qsize() == DOOR_PLACES  # the door kept the rest out
                read = http.get(f"/lsm/v1/service_inventory/thing/{things[0].id}")
                assert read.status_code == 200
                assert not answers
        finally:
            _join(senders)

    assert answers == {t.id: 200 for t in things}
    assert all(driver.get(t).version == t.version + 1 for t in things)
    assert door.counts() == (0, 0)


def _senders(
    http: httpx.Client, things: list[InstanceOut], answers: dict[str, int]
) -> list[threading.Thread]:
    """A thread per thing that PATCHes it once and records the answer's status (not started)."""

    def patch(thing_id: str, version: int) -> None:
        response = http.patch(
            f"/lsm/v1/service_inventory/thing/{thing_id}",
            json={"current_version": version, "attributes": {"size": 9}},
        )
        answers[thing_id] = response.status_code

    return [threading.Thread(target=patch, args=(t.id, t.version)) for t in things]


def _start(senders: list[threading.Thread]) -> None:
    for sender in senders:
        sender.start()


def _join(senders: list[threading.Thread]) -> None:
    """Wait for the senders that started (a failed test must not leave them running)."""
    for sender in senders:
        if sender.ident is not None:
            sender.join(WAIT_S)


def _door(engine: ApiRuntime) -> ChangeAdmission:
    """The API's ``ChangeAdmission`` middleware (built with the app's middleware stack)."""
    layer: object = engine.app.middleware_stack
    while layer is not None:
        if isinstance(layer, ChangeAdmission):
            return layer
        layer = getattr(layer, "app", None)
    raise AssertionError("the API has no write-lane door")
