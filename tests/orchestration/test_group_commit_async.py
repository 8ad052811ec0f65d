"""Group commit awaited on an event loop (``GroupCommit.run_async``, ``Orchestrator.execute_async``,
``InventoryFacade.*_async``): the same shared transaction and the same answers as a thread's
``run``, without a thread per caller (both backends).

The writer is held on a gate (a work item that waits) until every command under test is queued,
so they share one transaction; nothing waits on luck.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from lsm.errors import InvalidInput, UnknownInstance, VersionConflict
from lsm.facade import RequestContext
from lsm.facade.inventory import InThread
from lsm.orchestration import Orchestrator
from lsm.orchestration.group import GroupCommit
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from tests.orchestration.helpers import Driver, fail_the_commit, gated, group_of, outcome
from tests.orchestration.test_auto_chain import failing_auto, trail
from tests.waiting import wait_until

WAIT_S = 60.0


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    """An engine with group commit on, on both backends (by default it is on for SQLite only)."""
    return engine_factory(config={"group_commit": True})


def _on_a_loop(
    group: GroupCommit, calls: list[Callable[[], Coroutine[Any, Any, Any]]], wakes: list[int]
) -> list[Any]:
    """Await every call on one new event loop while the writer is gated until all are queued;
    each call's result or exception. ``wakes`` gets how often the writer called into the loop."""

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        real = loop.call_soon_threadsafe

        def counting(callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            wakes.append(1)
            return real(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]  # counting the wake-ups of this one loop
        tasks = [asyncio.ensure_future(call()) for call in calls]
        return await asyncio.gather(*tasks, return_exceptions=True)

    with gated(group):
        runner = threading.Thread(target=lambda: results.extend(asyncio.run(main())))
        results: list[Any] = []
        runner.start()
        wait_until(lambda: group._queue.qsize() >= len(calls), "every call queued")
    runner.join(WAIT_S)
    return results


def _thread_runner_never_used(*_args: Any, **_kwargs: Any) -> Awaitable[InstanceOut]:
    raise AssertionError("the change should have been awaited on the loop, not in a thread")


def _update(
    engine: ApiRuntime, ref: str, version: int, size: int, thread: InThread = _thread_runner_never_used
) -> Coroutine[Any, Any, InstanceOut]:
    """The API's PATCH of a thing's size, awaited on the loop (``thread``: its fallback)."""
    return engine.facades.inventory.update_instance_async(
        RequestContext.local(),
        "thing",
        ref,
        current_version=version,
        attributes={"size": size},
        thread=thread,
    )


def test_loop_callers_share_one_transaction_each_answered_as_alone(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(3)]
    group = group_of(engine)
    engine.context(None)  # the environment's context is fresh in the cache: no thread needed

    def update(ref: str, version: int, size: int) -> Callable[[], Coroutine[Any, Any, Any]]:
        return lambda: _update(engine, ref, version, size)

    calls = [update(t.id, t.version, 7) for t in things]
    calls.append(update(things[0].id, things[0].version, 8))  # the same version again: 409
    calls.append(update("00000000-0000-0000-0000-000000000000", 1, 9))  # no such instance
    batches_before, items_before = group.batches, group.items
    wakes: list[int] = []
    results = _on_a_loop(group, calls, wakes)

    assert [type(r) for r in results] == [InstanceOut] * 3 + [VersionConflict, UnknownInstance], results
    assert all(r.state == "update_start" and r.candidate_attributes["size"] == 7 for r in results[:3])
    assert group.batches - batches_before == 2  # the gate's batch, then all five together
    assert group.items - items_before == 1 + len(calls)
    assert len(wakes) == 1  # one call into the loop answered the whole batch
    for thing in things:
        assert driver.get(thing).version == thing.version + 1


def test_a_failing_commit_answers_every_loop_caller_with_its_error(engine: ApiRuntime) -> None:
    driver = Driver(engine)
    things = [driver.reach("up") for _ in range(3)]
    group = group_of(engine)

    async def sabotaging() -> None:
        await group.run_async(fail_the_commit)

    def update(thing: InstanceOut) -> Callable[[], Coroutine[Any, Any, Any]]:
        return lambda: _update(engine, thing.id, thing.version, 5)

    engine.context(None)
    results = _on_a_loop(group, [update(t) for t in things] + [sabotaging], [])

    assert all(isinstance(r, RuntimeError) for r in results), results
    for thing in things:
        assert (driver.get(thing).version, driver.get(thing).state) == (thing.version, "up")


def test_a_cancelled_caller_loses_only_its_answer(engine: ApiRuntime) -> None:
    """A client that goes away does not withdraw its change: it commits, as a thread's would."""
    driver = Driver(engine)
    thing, other = driver.reach("up"), driver.reach("up")
    group = group_of(engine)
    engine.context(None)

    async def main() -> None:
        call = asyncio.ensure_future(_update(engine, thing.id, thing.version, 3))
        async with asyncio.timeout(WAIT_S):
            while group._queue.qsize() < 1:
                await asyncio.sleep(0.001)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    with gated(group):
        runner = threading.Thread(target=lambda: asyncio.run(main()))
        runner.start()
        runner.join(WAIT_S)
    wait_until(lambda: driver.get(thing).version == thing.version + 1, "the change committed")
    assert (driver.get(thing).candidate_attributes or {}).get("size") == 3
    # the writer lives on: the next change is answered
    assert driver.update(other, size=4).version == other.version + 1


def test_a_stale_context_or_no_group_goes_through_the_callers_thread(
    engine: ApiRuntime, engine_factory: Callable[..., ApiRuntime]
) -> None:
    ran_in_thread: list[str] = []

    async def in_thread(func: Callable[..., InstanceOut], *args: Any, **kwargs: Any) -> InstanceOut:
        ran_in_thread.append(func.__name__)
        return await asyncio.to_thread(func, *args, **kwargs)

    def update(runtime: ApiRuntime, thing: InstanceOut) -> InstanceOut:
        return asyncio.run(_update(runtime, thing.id, thing.version, 6, thread=in_thread))

    driver = Driver(engine)
    thing = driver.reach("up")
    environments = engine.core.environments
    engine.context(None)
    assert environments.fresh_context(None) is not None
    environments._loaded.clear()  # type: ignore[attr-defined]  # every context due a check
    assert environments.fresh_context(None) is None
    answer = update(engine, thing)
    assert (answer.version, ran_in_thread) == (thing.version + 1, ["_execute"])
    assert environments.fresh_context(None) is not None  # the thread's call checked it again

    ungrouped = engine_factory(config={"group_commit": False})
    assert ungrouped.orchestrator.group is None
    other_driver = Driver(ungrouped)
    other_driver.created = 100  # the same database: other names
    other = other_driver.reach("up")
    ungrouped.context(None)
    assert update(ungrouped, other).version == other.version + 1
    assert ran_in_thread == ["_execute", "_execute"]


def test_a_refused_auto_step_is_fired_after_the_commit_off_the_loop(
    engine: ApiRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = Driver(engine)
    updated = driver.reach("update_start")
    calls = failing_auto(monkeypatch, InvalidInput("refused once"), times=1)
    completed_in: list[int] = []
    real = Orchestrator._complete

    def complete(self: Orchestrator, *args: Any) -> Any:
        completed_in.append(threading.get_ident())
        return real(self, *args)

    monkeypatch.setattr(Orchestrator, "_complete", complete)
    loop_thread: list[int] = []

    async def main() -> Any:
        loop_thread.append(threading.get_ident())
        return await engine.orchestrator.execute_async(driver.ctx, outcome(updated))

    row = asyncio.run(main())

    assert len(completed_in) == 1 and completed_in != loop_thread  # its blocking rest: a thread
    assert calls[0] == 2  # refused in the chain, then fired after the commit
    assert (row.state, row.version) == ("update_inprogress", updated.version + 2)
    assert trail(engine, updated)[-2:] == [
        ("update_start", "update_acknowledged", "validate"),
        ("update_acknowledged", "update_inprogress", "auto"),
    ]
