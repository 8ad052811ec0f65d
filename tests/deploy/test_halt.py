"""Halt and resume, pause and unpause: the brake holds compiles and deploys, and lets go in order.

Through the facades and the service loop's ``drain`` (it runs everything this process may claim,
in the calling thread, until nothing is left): what is still queued or pending after a drain
was refused by every claim. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import sqlmodel
from sqlalchemy import select
from sqlmodel import col

from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.tables import CompileRow
from tests.deploy import file_model
from tests.deploy.conftest import LOCAL, get, order
from tests.waiting import wait_until

PORT_FILE = "test::File[ports,path=ports/r1/eth0.conf]"


def statuses(engine: ApiRuntime) -> dict[str, str]:
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(lsm_resource_state.c.resource_id, lsm_resource_state.c.status)
        )
        return {r[0]: r[1] for r in rows}


def compiles(engine: ApiRuntime) -> list[tuple[str, str]]:
    with engine.db.read() as session:
        rows = session.exec(sqlmodel.select(CompileRow).order_by(col(CompileRow.created_at)))
        return [(r.kind, r.status) for r in rows]


def test_a_halted_environment_takes_orders_but_runs_nothing_until_resumed(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying()
    halts = engine.facades.halts
    halts.halt(LOCAL)
    router = order(engine, "router", {"name": "r1"})
    port = order(engine, "port", {"name": "eth0", "router": router.id})

    engine.processing.drain()  # runs whatever this process may claim (webhook rounds only)
    assert [get(engine, e, i.id).state for e, i in (("router", router), ("port", port))] == ["start", "start"]
    assert compiles(engine) == [("validation", "queued"), ("validation", "queued")]
    assert statuses(engine) == {} and not state_dir.exists()
    assert file_model.CALLS == []

    halts.halt(LOCAL)  # a second halt changes nothing
    assert engine.facades.environments.get_environment(LOCAL).halted is True
    halts.resume(LOCAL)
    engine.processing.drain()

    assert [get(engine, e, i.id).state for e, i in (("router", router), ("port", port))] == ["up", "up"]
    assert (state_dir / "ports/r1/eth0.conf").read_text() == "mtu=1500"
    # the queued requests ran in the order they were made: the router's validation first
    log = engine.facades.inventory.instance_log(LOCAL, "router", router.id)
    assert [e.target for e in log][:3] == ["start", "acknowledged", "creating"]
    halts.resume(LOCAL)  # a second resume changes nothing
    assert engine.facades.environments.get_environment(LOCAL).halted is False


def test_a_halt_after_the_export_holds_the_deploy(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying()
    router = order(engine, "router", {"name": "r1"})
    # run the compiles only (validation, then the export): the agent is left out of this drain
    engine.processing.compiles.claim().run()  # type: ignore[union-attr]  # a compile is queued
    engine.processing.compiles.claim().run()  # type: ignore[union-attr]  # a compile is queued
    assert get(engine, "router", router.id).state == "creating"
    engine.facades.halts.halt(LOCAL)

    engine.processing.drain()
    assert not (state_dir / "routers/r1.conf").exists()
    assert set(statuses(engine).values()) <= {"pending"}

    engine.facades.halts.resume(LOCAL)
    engine.processing.drain()
    assert get(engine, "router", router.id).state == "up"


def test_a_paused_agent_holds_its_resources_while_the_others_deploy(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying()
    halts = engine.facades.halts
    halts.pause(LOCAL, "ports")
    router = order(engine, "router", {"name": "r1"})
    port = order(engine, "port", {"name": "eth0", "router": router.id})
    engine.processing.drain()

    assert get(engine, "router", router.id).state == "up"
    assert get(engine, "port", port.id).state == "creating"
    assert statuses(engine) == {file_model.router_file("r1"): "deployed", PORT_FILE: "pending"}
    assert not (state_dir / "ports").exists()

    halts.pause(LOCAL, "ports")  # pausing a paused agent changes nothing
    halts.unpause(LOCAL, "ports")
    engine.processing.drain()
    assert get(engine, "port", port.id).state == "up"
    assert (state_dir / "ports/r1/eth0.conf").exists()
    halts.unpause(LOCAL, "ports")  # unpausing a running agent changes nothing


def test_a_resume_lifts_the_pauses_of_the_halt_but_not_those_asked_to_stay(
    deploying: Callable[..., ApiRuntime],
) -> None:
    engine = deploying()
    halts = engine.facades.halts
    halts.pause(LOCAL, "own")  # paused on its own, before the halt
    halts.halt(LOCAL)
    halts.pause(LOCAL, "routers", stay_paused=True)
    halts.pause(LOCAL, "ports")  # during the halt, without asking to stay
    halts.pause(LOCAL, "own")  # a pause during the halt does not shorten the earlier one
    environment = engine.facades.environments.get_environment(LOCAL)
    paused = {p.agent: p.stay_paused for p in environment.paused_agents}
    assert paused == {"own": True, "routers": True, "ports": False}

    halts.resume(LOCAL)
    after = engine.facades.environments.get_environment(LOCAL)
    assert not after.halted
    assert sorted(p.agent for p in after.paused_agents) == ["own", "routers"]

    router = order(engine, "router", {"name": "r1"})
    engine.processing.drain()
    assert get(engine, "router", router.id).state == "creating"  # its agent stayed paused
    halts.unpause(LOCAL, "routers")
    engine.processing.drain()
    assert get(engine, "router", router.id).state == "up"


def test_handler_calls_under_way_finish_and_are_recorded_when_the_halt_comes(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory(
        "tests.deploy.file_model",
        embedded_worker=True,
        embedded_agent=True,
        config={"state_dir": str(state_dir)},
    )
    release = file_model.HOLD["routers/r1.conf"] = threading.Event()
    try:
        router = order(engine, "router", {"name": "r1"})
        port = order(engine, "port", {"name": "eth0", "router": router.id})
        # the port is exported too (compiles go on while the router's handler is held)
        wait_until(
            lambda: (
                statuses(engine).get(file_model.router_file("r1")) == "deploying"
                and statuses(engine).get(PORT_FILE) == "pending"
            ),
            "the router's handler runs and the port's resource waits for it",
        )
        engine.facades.halts.halt(LOCAL)
    finally:
        release.set()
        file_model.HOLD.clear()
    # the call under way ends and its result is written; the port, ready only now, waits
    wait_until(lambda: get(engine, "router", router.id).state == "up", "the router's result is recorded")
    assert (state_dir / "routers/r1.conf").exists()
    assert statuses(engine)[PORT_FILE] == "pending"
    assert get(engine, "port", port.id).state == "creating"

    engine.facades.halts.resume(LOCAL)  # wakes the loop of this process
    wait_until(lambda: get(engine, "port", port.id).state == "up", "the port deploys after the resume")
