"""Deploys close the lifecycle loop: orders reach ``up``, failures ``failed``, deletes ``terminated``.

End to end through the facades and the embedded service loop (compile worker + deploy agent),
on real files written by a handler defined in the test model, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import func, select

from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy import queries as deploy_queries
from lsm.store.deploy.tables import lsm_resource_action, lsm_resource_state
from lsm.store.tables import CompileRow
from tests.deploy import file_model
from tests.deploy.conftest import LOCAL, get, order


def statuses(engine: ApiRuntime) -> dict[str, str]:
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(lsm_resource_state.c.resource_id, lsm_resource_state.c.status)
        )
        return {r[0]: r[1] for r in rows}


def states(engine: ApiRuntime, *pairs: tuple[str, str]) -> list[str]:
    return [get(engine, entity, ref).state for entity, ref in pairs]


def test_an_order_is_deployed_and_reaches_up(deploying: Callable[..., ApiRuntime], state_dir: Path) -> None:
    engine = deploying()
    router = order(engine, "router", {"name": "r1"})
    port = order(engine, "port", {"name": "eth0", "router": router.id})
    engine.processing.drain()

    assert states(engine, ("router", router.id), ("port", port.id)) == ["up", "up"]
    assert (state_dir / "routers/r1.conf").read_text() == "motd=hello"
    assert (state_dir / "ports/r1/eth0.conf").read_text() == "mtu=1500"
    assert set(statuses(engine).values()) == {"deployed"}
    log = engine.facades.inventory.instance_log(LOCAL, "port", port.id)
    assert [(e.source, e.target) for e in log][-1] == ("creating", "up")
    assert log[-1].actor == "system"
    # the port's file was written after the router's (requires, across agents)
    assert file_model.CALLS.index(("create", "routers/r1.conf")) < file_model.CALLS.index(
        ("create", "ports/r1/eth0.conf")
    )


def test_a_failing_handler_fails_the_order_and_a_redeploy_after_the_fix_brings_it_up(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying()
    file_model.FAULTS["routers/r1.conf"] = -1
    router = order(engine, "router", {"name": "r1"})
    port = order(engine, "port", {"name": "eth0", "router": router.id})
    engine.processing.drain()

    assert states(engine, ("router", router.id), ("port", port.id)) == ["failed", "failed"]
    found = statuses(engine)
    assert found[file_model.router_file("r1")] == "failed"
    assert found["test::File[ports,path=ports/r1/eth0.conf]"] == "skipped"
    assert not (state_dir / "ports/r1/eth0.conf").exists()
    with engine.db.read() as session:
        actions = list(
            session.connection().execute(
                select(lsm_resource_action.c.action, lsm_resource_action.c.messages).where(
                    lsm_resource_action.c.resource_id == file_model.router_file("r1")
                )
            )
        )
    assert [a[0] for a in actions] == ["error"]
    assert "injected failure of routers/r1.conf" in actions[0][1][-1]["message"]
    assert "Traceback" in actions[0][1][-1]["data"]["traceback"]

    file_model.FAULTS.clear()  # the target is fixed; redeploy what failed
    with engine.db.write() as session:
        assert deploy_queries.schedule_redeploy(session, engine.context(None).env_id, None, repair=False)
    engine.processing.wake()
    engine.processing.drain()

    assert states(engine, ("router", router.id), ("port", port.id)) == ["up", "up"]
    log = engine.facades.inventory.instance_log(LOCAL, "router", router.id)
    assert [(e.source, e.target) for e in log][-2:] == [("creating", "failed"), ("failed", "up")]
    assert (state_dir / "ports/r1/eth0.conf").exists()


def test_an_update_goes_through_update_inprogress_to_up_and_rewrites_the_file(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying()
    router = order(engine, "router", {"name": "r1"})
    port = order(engine, "port", {"name": "eth0", "router": router.id})
    engine.processing.drain()
    current = get(engine, "port", port.id)

    engine.facades.inventory.update_instance(
        LOCAL, "port", port.id, current_version=current.version, attributes={"mtu": 9000}
    )
    engine.processing.drain()

    assert get(engine, "port", port.id).state == "up"
    assert (state_dir / "ports/r1/eth0.conf").read_text() == "mtu=9000"
    log = engine.facades.inventory.instance_log(LOCAL, "port", port.id)
    assert [e.target for e in log][-3:] == ["update_acknowledged", "update_inprogress", "up"]
    assert ("update", "ports/r1/eth0.conf") in file_model.CALLS
    # the router's resource did not change: it was not acted on again
    assert file_model.CALLS.count(("create", "routers/r1.conf")) == 1
    assert ("update", "routers/r1.conf") not in file_model.CALLS


def test_a_delete_removes_the_files_dependants_first_and_ends_terminated(
    deploying: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = deploying()
    router = order(engine, "router", {"name": "r1"})
    port = order(engine, "port", {"name": "eth0", "router": router.id})
    engine.processing.drain()

    for entity, ref in (("port", port.id), ("router", router.id)):
        version = get(engine, entity, ref).version
        engine.facades.inventory.delete_instance(LOCAL, entity, ref, current_version=version)
    engine.processing.drain()

    assert states(engine, ("router", router.id), ("port", port.id)) == ["terminated", "terminated"]
    assert not (state_dir / "routers/r1.conf").exists()
    assert not (state_dir / "ports/r1/eth0.conf").exists()
    deletes = [call for call in file_model.CALLS if call[0] == "delete"]
    assert deletes == [("delete", "ports/r1/eth0.conf"), ("delete", "routers/r1.conf")]
    assert statuses(engine) == {}  # no longer in the desired state: no longer managed


def test_an_instance_whose_resources_are_deployed_already_moves_on_without_a_deploy(
    deploying: Callable[..., ApiRuntime],
) -> None:
    engine = deploying()
    router = order(engine, "router", {"name": "r1"})
    engine.processing.drain()
    current = get(engine, "router", router.id)
    calls = len(file_model.CALLS)

    # same attributes: the new desired-state version changes no resource
    engine.facades.inventory.update_instance(
        LOCAL, "router", router.id, current_version=current.version, attributes={"motd": "hello"}
    )
    engine.processing.drain()

    assert get(engine, "router", router.id).state == "up"
    assert len(file_model.CALLS) == calls


def test_a_redeploy_of_an_up_instance_is_no_transfer_no_version_no_event_no_compile(
    deploying: Callable[..., ApiRuntime],
) -> None:
    engine = deploying()
    router = order(engine, "router", {"name": "r1"})
    engine.processing.drain()
    before = get(engine, "router", router.id)
    events = len(engine.facades.inventory.instance_log(LOCAL, "router", router.id))
    with engine.db.read() as session:
        compiles = session.connection().execute(select(func.count()).select_from(CompileRow)).scalar_one()

    for _ in range(2):  # a repair re-reads everything: up -> up twice
        with engine.db.write() as session:
            deploy_queries.schedule_redeploy(session, engine.context(None).env_id, None, repair=True)
        engine.processing.drain()

    after = get(engine, "router", router.id)
    assert (after.state, after.version, after.desired_state_version) == (
        "up",
        before.version,
        before.desired_state_version,
    )
    assert len(engine.facades.inventory.instance_log(LOCAL, "router", router.id)) == events
    with engine.db.read() as session:
        assert (
            session.connection().execute(select(func.count()).select_from(CompileRow)).scalar_one()
            == compiles
        )
    assert [a for a in file_model.CALLS if a[1] == "routers/r1.conf"] == [("create", "routers/r1.conf")]
