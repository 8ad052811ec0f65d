"""The agent split by job: a claim only claims, a plan and a recovery pass are work of their own,
the keepalive only keeps alive, the repair runs on its own schedule (and agents that look at
once start its clock once).

On SQLite and PostgreSQL, with an agent driven by hand in the test's thread.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsm.deploy.batches import DeployWork
from lsm.deploy.work import Job
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.deploy import repair as deploy_repair
from lsm.store.tables import ScheduleRow
from tests.deploy.agents import Clock, agent_for, export, file, run, status


def test_a_claim_claims_only_what_a_plan_made_ready(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    resource = file("a.conf")
    export(engine, {"s": [resource]})

    assert agent.claiming.claim() is None  # the new version is not planned: nothing to claim
    plan = agent.planning.claim()
    assert isinstance(plan, Job) and agent.claiming.claim() is None  # claimed, not yet run
    plan.run()
    assert agent.planning.claim() is None  # planned once
    work = agent.claiming.claim()
    assert isinstance(work, DeployWork) and [c.resource_id for c in work.claimed] == [resource.id]
    work.run()
    assert status(engine, resource.id)["status"] == "deployed"


def test_the_recovery_pass_is_due_at_start_and_not_again_until_names_are_taken_over(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    first = agent.passes.claim()
    assert isinstance(first, Job)
    first.run()
    assert agent.passes.claim() is None

    export(engine, {"s": [file("a.conf")]})
    plan = agent.planning.claim()
    assert plan is not None
    plan.run()
    work = agent.claiming.claim()  # takes the name "a": the feedback its dead holders left is due
    assert work is not None
    again = agent.passes.claim()
    assert isinstance(again, Job)
    again.run()
    work.run()
    assert agent.passes.claim() is None and run(agent) == 0
    agent.stop()
    agent.passes.request()
    assert agent.passes.claim() is None and agent.planning.claim() is None  # stopped: no new work


def test_the_keepalive_keeps_leases_only_and_the_repair_is_its_own_schedule(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model", deploy_repair_interval=60)
    clock = Clock()
    agent = agent_for(engine, state_dir, clock=clock)
    resource = file("a.conf")
    export(engine, {"s": [resource]})
    run(agent)
    agent.repair()  # the first look starts the repair's clock
    clock.advance(61)

    agent.keepalive()
    assert status(engine, resource.id)["status"] == "deployed"  # no repair from the keepalive
    assert agent.names.held  # its name renewed
    agent.repair()
    assert status(engine, resource.id)["status"] == "pending"


def test_diagnosis_formats_lease_names_without_loading_the_deploy_agent() -> None:
    code = "import sys, lsm.facade.diagnosis; print('lsm.deploy.agent' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_agent_processes_that_look_at_once_start_the_repair_clock_once(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agent processes start together and look at an environment's repair at once: the one
    that finds the clock row missing after the other inserted it gives way (a duplicate key
    failed its look, with a traceback in the agent's log)."""
    if db.is_sqlite:
        pytest.skip("SQLite's write transaction is exclusive: two looks can not overlap")
    env_id, now = "env-1", Clock().now
    inserted, about_to_insert = threading.Event(), threading.Event()
    start_clock = deploy_repair._start_clock

    def late(session: Any, env: str, at: Any) -> None:
        if threading.current_thread().name == "second":
            about_to_insert.set()  # it read no row: the first look has not committed yet
        start_clock(session, env, at)

    monkeypatch.setattr(deploy_repair, "_start_clock", late)
    errors: list[BaseException] = []

    def second() -> None:
        inserted.wait()
        try:
            with db.write() as session:
                assert deploy_repair.repair_if_due(session, env_id, now, 60) == 0
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=second, name="second")
    thread.start()
    with db.write() as session:
        assert deploy_repair.repair_if_due(session, env_id, now, 60) == 0
        inserted.set()
        assert about_to_insert.wait(60)
    thread.join()

    assert errors == []
    with db.read() as session:
        assert session.get(ScheduleRow, (env_id, deploy_repair.REPAIR_JOB)) is not None
