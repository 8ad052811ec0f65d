"""Every metaparameter of docs/semantics.md §5, enforced by the engine around a plain CRUD handler.

Desired state is written straight to the store and deployed by an agent with an injected clock,
on SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from lsm.deploy.agent import AgentService
from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy import queries as deploy_queries
from tests.deploy import file_model
from tests.deploy.agents import Clock, actions, agent_for, export, file, run, status


def make(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path, **options: object
) -> tuple[ApiRuntime, AgentService, Clock]:
    engine = engine_factory("tests.deploy.file_model")
    clock = Clock()
    agent = agent_for(engine, state_dir, clock=clock, **options)
    return engine, agent, clock


def test_retry_2_deploys_a_handler_that_fails_twice_on_the_third_try(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir)
    resource = file("a.conf", retry=2)
    file_model.FAULTS["a.conf"] = 2
    export(engine, {"s1": [resource]})
    run(agent)

    assert [a["action"] for a in actions(engine, resource.id)] == ["error", "error", "create"]
    row = status(engine, resource.id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("deployed", 0, None)
    assert (state_dir / "a.conf").read_text() == "x"


def test_retry_1_ends_failed_with_dependants_skipped_and_recovers_when_fixed(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir)
    base = file("base.conf", retry=1)
    top = file("top.conf", agent="b", requires=[base.id])
    file_model.FAULTS["base.conf"] = -1
    export(engine, {"s1": [base, top]})
    run(agent)

    assert [a["action"] for a in actions(engine, base.id)] == ["error", "error"]
    assert (status(engine, base.id)["status"], status(engine, base.id)["attempts"]) == ("failed", 2)
    assert status(engine, top.id)["status"] == "skipped"
    assert [a["action"] for a in actions(engine, top.id)] == ["skip"]
    assert run(agent) == 0  # a spent resource is final: nothing retries it by itself

    file_model.FAULTS.clear()
    with engine.db.write() as session:
        deploy_queries.schedule_redeploy(session, engine.context(None).env_id, None, repair=False)
    run(agent)
    assert status(engine, base.id)["status"] == "deployed"
    assert status(engine, top.id)["status"] == "deployed"
    assert (state_dir / "top.conf").exists()


def test_delay_with_backoff_waits_between_tries(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, clock = make(engine_factory, state_dir)
    resource = file("a.conf", retry=-1, delay=10, backoff=True)
    file_model.FAULTS["a.conf"] = 2
    export(engine, {"s1": [resource]})

    run(agent)
    assert len(actions(engine, resource.id)) == 1
    assert status(engine, resource.id)["next_attempt_at"] == clock.now + timedelta(seconds=10)
    clock.advance(9)
    run(agent)
    assert len(actions(engine, resource.id)) == 1  # not before its delay
    clock.advance(1)
    run(agent)
    assert len(actions(engine, resource.id)) == 2
    clock.advance(19)
    run(agent)
    assert len(actions(engine, resource.id)) == 2  # the delay doubled: 20 s
    clock.advance(1)
    run(agent)
    assert [a["action"] for a in actions(engine, resource.id)] == ["error", "error", "create"]


def test_limit_and_burst_bound_the_actions_over_a_window_and_survive_a_new_version(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, clock = make(engine_factory, state_dir)
    meta: dict[str, Any] = {"limit": 0.5, "burst": 2}  # one token per 2 s, at most 2 saved
    resource = file("a.conf", "v0", **meta)
    export(engine, {"s1": [resource]})
    run(agent)
    for step in range(1, 11):  # a new content every 0.5 s for 5 s
        export(engine, {"s1": [file("a.conf", f"v{step}", **meta)]})
        run(agent)
        clock.advance(0.5)
    acted = [a for a in actions(engine, resource.id) if a["action"] in ("create", "update")]
    # 5 s at 0.5/s plus a burst of 2: at most 2 + 2.5 actions, although 11 versions wanted one each
    assert 3 <= len(acted) <= 4
    row = status(engine, resource.id)
    assert row["status"] == "pending" and row["next_attempt_at"] > clock.now - __import__(
        "datetime"
    ).timedelta(seconds=2)

    # the drained bucket is still drained under a newer version
    before = len(actions(engine, resource.id))
    export(engine, {"s1": [file("a.conf", "final", **meta)]})
    run(agent)
    assert len(actions(engine, resource.id)) == before
    clock.advance(2)
    run(agent)
    assert (state_dir / "a.conf").read_text() == "final"


def test_never_more_than_n_handlers_inside_a_semaphore(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir, threads=8)
    file_model.SLOW["*"] = 0.02
    export(engine, {"s1": [file(f"f{i}.conf", sema=["links:2"]) for i in range(16)]})
    run(agent)
    assert file_model.PEAK["links"] <= 2
    assert all(status(engine, f"test::File[a,path=f{i}.conf]")["status"] == "deployed" for i in range(16))


def test_the_global_semaphore_bounds_every_handler(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir, threads=8, sema=1)
    file_model.SLOW["*"] = 0.01
    export(engine, {"s1": [file(f"f{i}.conf", sema=[f"own{i}:5"]) for i in range(8)]})
    run(agent)
    # with a global semaphore of 1 no two handlers ever ran at once
    assert sum(file_model.PEAK.values()) == 8 and max(file_model.PEAK.values()) == 1


def test_noop_reports_the_change_and_changes_nothing(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir)
    state_dir.mkdir(parents=True)
    (state_dir / "a.conf").write_text("old")
    resource = file("a.conf", "new", noop=True)
    export(engine, {"s1": [resource]})
    run(agent)

    assert (state_dir / "a.conf").read_text() == "old"
    [action] = actions(engine, resource.id)
    assert action["action"] == "noop" and action["dry_run"]
    assert action["changes"] == {"content": {"current": "old", "desired": "new"}}
    assert status(engine, resource.id)["status"] == "noop_pending"
    assert file_model.CALLS == []


def test_the_global_noop_can_not_be_undone_by_a_resource(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir, noop=True)
    resource = file("a.conf", "new", noop=False)
    export(engine, {"s1": [resource], "s2": [file("b.conf")]})
    run(agent)
    assert not (state_dir / "a.conf").exists() and not (state_dir / "b.conf").exists()
    assert status(engine, resource.id)["status"] == "noop_pending"

    # the environment setting is the same switch
    engine2_agent = agent_for(engine, state_dir, owner="other")
    agent.stop()
    engine.environments.context(None).settings.deploy_noop = True
    export(engine, {"s3": [file("c.conf")]})
    run(engine2_agent)
    assert not (state_dir / "c.conf").exists()


def test_poll_repairs_a_drifted_file_within_its_interval(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, clock = make(engine_factory, state_dir)
    resource = file("a.conf", "good", poll=5)
    export(engine, {"s1": [resource]})
    run(agent)
    (state_dir / "a.conf").write_text("drifted")

    clock.advance(4)
    run(agent)
    assert (state_dir / "a.conf").read_text() == "drifted"  # not due yet
    clock.advance(1)
    run(agent)
    assert (state_dir / "a.conf").read_text() == "good"
    assert [a["action"] for a in actions(engine, resource.id)] == ["create", "update"]
    assert status(engine, resource.id)["status"] == "deployed"


def test_the_periodic_repair_rereads_everything_and_fixes_drift(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model", deploy_repair_interval=60)
    clock = Clock()
    agent = agent_for(engine, state_dir, clock=clock)
    resource = file("a.conf", "good")
    export(engine, {"s1": [resource]})
    run(agent)
    assert agent.repairs.schedule(clock.now) == 0  # the first look starts the clock
    (state_dir / "a.conf").write_text("drifted")

    clock.advance(59)
    assert agent.repairs.schedule(clock.now) == 0
    run(agent)
    assert (state_dir / "a.conf").read_text() == "drifted"
    clock.advance(1)
    assert agent.repairs.schedule(clock.now) == 1
    run(agent)
    assert (state_dir / "a.conf").read_text() == "good"
    assert [a["action"] for a in actions(engine, resource.id)] == ["create", "update"]
    assert agent.repairs.schedule(clock.now) == 0  # once per interval


def test_a_handler_that_hangs_fails_its_try_after_the_deploy_timeout(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, agent, _ = make(engine_factory, state_dir, deploy_timeout=0.2)
    file_model.SLOW["slow.conf"] = 2.0
    slow, quick = file("slow.conf"), file("quick.conf")
    export(engine, {"s1": [slow, quick]})
    run(agent)

    row = status(engine, slow.id)
    assert row["status"] == "failed" and "deploy_timeout" in row["last_error"]
    assert [a["action"] for a in actions(engine, slow.id)] == ["error"]
    assert status(engine, quick.id)["status"] == "deployed"  # the batch did not wait for it
    # the given-up handler is stopped when its sleep returns (``lsm.interrupt``): its late
    # change never lands. Wait for its thread so that nothing of it reaches another test.
    for _ in range(6000):
        if agent.runner.handlers.lingering == 0:
            break
        time.sleep(0.01)
    assert agent.runner.handlers.lingering == 0
    assert ("create", "slow.conf") not in file_model.CALLS


def test_hung_handlers_do_not_keep_the_agent_from_deploying_the_rest(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    """One handler thread and two handlers that never return: each fails after the time limit,
    its thread is replaced, and the resource queued behind them deploys in the same run. (A
    fixed pool kept its one thread on the first hung handler: nothing else ever started.)"""
    engine, agent, _ = make(engine_factory, state_dir, deploy_timeout=0.2, threads=1)
    held = {name: threading.Event() for name in ("hung-1.conf", "hung-2.conf")}
    file_model.HOLD.update(held)
    hung = [file(name) for name in held]
    quick = file("quick.conf")
    export(engine, {"s1": [*hung, quick]})
    runner = threading.Thread(target=run, args=(agent,))
    try:
        runner.start()
        runner.join(60)  # a bound, not a speed check: the old pool never returned
        finished = not runner.is_alive()
        calls_while_held = list(file_model.CALLS)
    finally:
        for event in held.values():
            event.set()
        runner.join()
        file_model.HOLD.clear()
    assert finished, "the agent waited for a hung handler"
    assert status(engine, quick.id)["status"] == "deployed"
    for resource in hung:
        row = status(engine, resource.id)
        assert row["status"] == "failed" and "deploy_timeout" in row["last_error"]
    assert ("create", "quick.conf") in calls_while_held
    assert not any(path.startswith("hung-") for _, path in calls_while_held)  # still hung then
    assert agent.runner.handlers.given_up == 2
    for _ in range(6000):  # the released threads end (their results are dropped)
        if agent.runner.handlers.lingering == 0:
            break
        time.sleep(0.01)
    assert agent.runner.handlers.lingering == 0
