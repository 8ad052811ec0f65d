"""Concurrent writers: read-modify-write loops on one instance lose no update (both backends)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from lsm.errors import VersionConflict
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime

THREADS = 8
UPDATES_PER_THREAD = 15


def test_eight_threads_updating_one_instance_lose_no_update(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.counters")
    counter = engine.facades.inventory.create_instance(RequestContext.local(), "counter", {"name": "c"})
    accepted = [0] * THREADS
    conflicts = [0] * THREADS
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            while accepted[index] < UPDATES_PER_THREAD:
                current = engine.facades.inventory.get_instance(RequestContext.local(), "counter", counter.id)
                value = (current.candidate_attributes or {})["value"]
                try:
                    engine.facades.inventory.update_instance(
                        RequestContext.local(),
                        "counter",
                        counter.id,
                        current_version=current.version,
                        attributes={"value": value + 1},
                    )
                except VersionConflict:
                    conflicts[index] += 1
                    continue
                accepted[index] += 1
        except BaseException as exc:  # surfaced below: a thread must not fail silently
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    final = engine.facades.inventory.get_instance(RequestContext.local(), "counter", counter.id)
    total = sum(accepted)
    assert total == THREADS * UPDATES_PER_THREAD
    assert final.version == 1 + total
    assert (final.candidate_attributes or {})["value"] == total
    assert (
        len(engine.facades.inventory.instance_log(RequestContext.local(), "counter", counter.id)) == 1 + total
    )
