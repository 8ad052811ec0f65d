"""Batched validation compiles: one run, many instances, each the outcome it would get alone."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from tests.conftest import TEST_LIFECYCLES, database_at_head

ROUTER_PORT = str(Path(__file__).resolve().parent.parent.parent / "examples" / "router_port")
EXAMPLES_PER_TEST = int(os.environ.get("LSM_PROPERTY_EXAMPLES", "15"))


def validation_reports(engine: ApiRuntime) -> dict[str, dict[str, Any]]:
    """instance id -> the report of its (last) validation compile."""
    out: dict[str, dict[str, Any]] = {}
    for compile_ in reversed(engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000)):
        if compile_.kind == "validation" and compile_.instance_id:
            out[compile_.instance_id] = {"status": compile_.status, **compile_.report, "id": compile_.id}
    return out


def routers(engine: ApiRuntime, count: int) -> list[str]:
    return engine.facades.inventory.import_instances(
        RequestContext.local(),
        "router",
        "up",
        [{"mgmt_ip": f"10.0.0.{i}", "name": f"r{i}"} for i in range(count)],
    )


def test_a_batch_rejects_exactly_the_bad_candidates_each_with_its_own_error(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(ROUTER_PORT)
    owners = routers(engine, 6)
    mtus = [1500, 10, 9000, 99_999, 68, 5]
    ports = [
        engine.facades.inventory.create_instance(
            RequestContext.local(), "port", {"name": "eth0", "router": owners[i], "mtu": mtu}
        ).id
        for i, mtu in enumerate(mtus)
    ]
    engine.processing.drain()
    reports = validation_reports(engine)
    assert {reports[p]["batch"]["size"] for p in ports} == {6}  # one run validated them all
    assert {reports[p]["batch"]["round"] for p in ports} == {1}  # different trees: side by side
    for port_id, mtu in zip(ports, mtus, strict=True):
        instance = engine.facades.inventory.get_instance(RequestContext.local(), "port", port_id)
        log = engine.facades.inventory.instance_log(RequestContext.local(), "port", port_id)
        if 68 <= mtu <= 9216:
            assert instance.state == "creating", log
            assert reports[port_id]["status"] == "success"
        else:
            assert instance.state == "rejected"
            (refusal,) = [e for e in log if e.is_error]
            assert f"mtu {mtu} is outside 68..9216" in refusal.message  # its own error, no other's
            assert refusal.compile_id == reports[port_id]["id"]
            assert reports[port_id]["status"] == "failed"
            assert "router_port" in reports[port_id]["error"]["traceback"]


def test_validations_of_one_tree_run_in_order_and_see_each_other(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """Two ports named alike on one router: alone, the second sees the promoted first and is refused;
    batched, the same: the second runs in a later round, after the first's outcome."""
    engine = engine_factory(ROUTER_PORT)
    (owner,) = routers(engine, 1)
    first = engine.facades.inventory.create_instance(
        RequestContext.local(), "port", {"name": "eth0", "router": owner}
    ).id
    second = engine.facades.inventory.create_instance(
        RequestContext.local(), "port", {"name": "eth0", "router": owner}
    ).id
    engine.processing.drain()
    reports = validation_reports(engine)
    assert [reports[p]["batch"]["round"] for p in (first, second)] == [1, 2]
    assert engine.facades.inventory.get_instance(RequestContext.local(), "port", first).state == "creating"
    assert engine.facades.inventory.get_instance(RequestContext.local(), "port", second).state == "rejected"
    assert "has another port with that name" in reports[second]["error"]["message"]


# -- the property: batched == one at a time ---------------------------------------------------------
PLAN = st.lists(
    st.tuples(
        st.integers(0, 3),  # which router the port hangs off
        st.sampled_from(["eth0", "eth1", "eth2"]),  # names clash now and then
        st.sampled_from([1500, 9000, 10]),  # 10 is refused by the model
    ),
    min_size=1,
    max_size=10,
)


def _world(backend: str, directory: Path) -> tuple[ApiRuntime, Database]:
    db = database_at_head(backend, directory)
    config = ServerConfig(
        database_url=db.url, model=ROUTER_PORT, lifecycle_dirs=[TEST_LIFECYCLES], embedded_worker=False
    )
    engine = build_api(config, db=db)
    engine.start()
    return engine, db


def _order(engine: ApiRuntime, routers_count: int, plan: list[tuple[int, str, int]], bad_router: int) -> None:
    """Routers (one with a name the router model accepts but whose ports will clash) then ports,
    all created through the API path with fixed ids, so both worlds hold the same instances."""
    for r in range(routers_count):
        engine.facades.inventory.create_instance(
            RequestContext.local(),
            "router",
            {"mgmt_ip": f"10.0.0.{r}", "name": f"r{r}"},
            instance_id=str(uuid.uuid5(uuid.NAMESPACE_OID, f"router-{r}")),
        )
    for n, (r, name, mtu) in enumerate(plan):
        router_id = str(uuid.uuid5(uuid.NAMESPACE_OID, f"router-{r % routers_count}"))
        engine.facades.inventory.create_instance(
            RequestContext.local(),
            "port",
            {"name": name, "router": router_id, "mtu": mtu if r != bad_router else 10},
            instance_id=str(uuid.uuid5(uuid.NAMESPACE_OID, f"port-{n}")),
        )


def _outcomes(engine: ApiRuntime) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entity in ("router", "port"):
        for instance in engine.facades.inventory.list_instances(
            RequestContext.local(), entity, include_deleted=True, limit=1000
        ):
            log = [
                (e.source, e.target, e.trigger, e.message, e.is_error)
                for e in engine.facades.inventory.instance_log(RequestContext.local(), entity, instance.id)
            ]
            out[instance.id] = (
                instance.state,
                instance.version,
                instance.candidate_attributes,
                instance.active_attributes,
                log,
            )
    return out


@settings(
    max_examples=EXAMPLES_PER_TEST, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=PLAN, routers_count=st.integers(1, 4), bad_router=st.integers(-1, 3))
def test_a_batched_validation_gives_every_instance_the_outcome_it_gets_alone(
    backend: str, plan: list[tuple[int, str, int]], routers_count: int, bad_router: int
) -> None:
    directory = Path(tempfile.mkdtemp(prefix="lsm-batched-"))
    worlds = []
    try:
        for name in ("alone", "batched"):
            (directory / name).mkdir()
            engine, db = _world(backend, directory / name)
            worlds.append((engine, db))
            _order(engine, routers_count, plan, bad_router)
        (alone, _), (batched, _) = worlds
        ctx_alone, ctx_batched = alone.context(None), batched.context(None)
        runs = 0
        while batches := alone.processing.runner.queue.claim_validations(
            ctx_alone.env_id, alone.processing.runner.queue.new_owner("t"), limit=1
        ):
            alone.processing.runner.validations.run(ctx_alone, batches)
            runs += 1
        claimed = batched.processing.runner.queue.claim_validations(
            ctx_batched.env_id, batched.processing.runner.queue.new_owner("t"), limit=1000
        )
        assert len(claimed) == runs  # the same requests, all in one claim
        assert batched.processing.runner.validations.run(ctx_batched, claimed) == []
        assert batched.processing.runner.queue.claim_validations(ctx_batched.env_id, "t/x", limit=1000) == []
        assert _outcomes(batched) == _outcomes(alone)
    finally:
        for engine, db in worlds:
            engine.stop()
            if not db.is_sqlite:
                db.drop_schema()
            db.dispose()  # the runtime did not open it: its pools are ours to close
        shutil.rmtree(directory, ignore_errors=True)


def test_a_validation_waits_for_an_older_one_of_its_tree_held_by_another_worker(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """A router is ordered, then a port on it; another worker holds the router's validation.

    The router in ``start`` is invisible to the port's validation (``validate_others: null``):
    run now, the port would be refused as ``owner_missing``. It must wait until the router's
    validation has ended, then pass, as it would have one after the other."""
    engine = engine_factory(ROUTER_PORT)
    ctx = engine.context(None)
    runner = engine.processing.runner
    router = engine.facades.inventory.create_instance(
        RequestContext.local(), "router", {"mgmt_ip": "10.0.0.1", "name": "r1"}
    ).id
    port = engine.facades.inventory.create_instance(
        RequestContext.local(), "port", {"name": "eth0", "router": router}
    ).id
    (elsewhere,) = runner.queue.claim_validations(ctx.env_id, runner.queue.new_owner("other"), limit=1)
    assert elsewhere.leader.instance_id == router  # the oldest: the router's, held by "other"
    mine = runner.queue.claim_validations(ctx.env_id, runner.queue.new_owner("this"), limit=10)
    assert [b.leader.instance_id for b in mine] == [port]

    assert runner.validations.run(ctx, mine) == mine  # left unrun: the router's goes first
    assert engine.facades.inventory.get_instance(RequestContext.local(), "port", port).state == "start"
    log = engine.facades.inventory.instance_log(RequestContext.local(), "port", port)
    assert not [e for e in log if e.is_error]

    assert runner.validations.run(ctx, [elsewhere]) == []  # "other" finishes the router's
    assert runner.validations.run(ctx, mine) == []  # now the port's runs, and sees its router
    assert engine.facades.inventory.get_instance(RequestContext.local(), "port", port).state == "creating"
    assert validation_reports(engine)[port]["status"] == "success"


def test_a_rounds_outcomes_and_the_ends_of_its_requests_commit_together(
    engine_factory: Callable[..., ApiRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording the requests' ends fails (the disk, say): the outcomes are rolled back with them,
    so the requests stay running for a resume, not finished-looking with nothing applied or
    applied with nothing finished."""
    engine = engine_factory(ROUTER_PORT)
    ctx = engine.context(None)
    runner = engine.processing.runner
    (owner,) = routers(engine, 1)
    port = engine.facades.inventory.create_instance(
        RequestContext.local(), "port", {"name": "eth0", "router": owner}
    )
    batches = runner.queue.claim_validations(ctx.env_id, runner.queue.new_owner("w"), limit=10)
    assert [b.leader.instance_id for b in batches] == [port.id]

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("disk gone while finishing the round")

    monkeypatch.setattr(runner.queue, "finish_many", broken)
    with pytest.raises(RuntimeError, match="disk gone"):
        runner.validations.run(ctx, batches)
    monkeypatch.undo()

    stored = engine.facades.inventory.get_instance(RequestContext.local(), "port", port.id)
    assert (stored.state, stored.version) == (port.state, port.version)  # nothing applied
    (request,) = [
        c
        for c in engine.facades.compiles.list_compiles(RequestContext.local())
        if c.id == batches[0].leader.id
    ]
    assert request.status == "running"  # still held: resumed or taken over, never lost
    assert runner.validations.run(ctx, batches) == []  # the same worker runs it again: it passes
    assert engine.facades.inventory.get_instance(RequestContext.local(), "port", port.id).state == "creating"


def _ports(engine: ApiRuntime, count: int, *, settle: bool = False) -> list[str]:
    """``count`` new ports on routers of their own, their validations queued (``settle``: the
    routers' own compiles have run first)."""
    owners = routers(engine, count)
    if settle:
        engine.processing.drain()
    return [
        engine.facades.inventory.create_instance(
            RequestContext.local(), "port", {"name": "eth0", "router": owner}
        ).id
        for owner in owners
    ]


def _status(engine: ApiRuntime, compile_ids: list[str]) -> list[str]:
    by_id = {
        c.id: c.status for c in engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000)
    }
    return [by_id[i] for i in compile_ids]


def _first_claim(
    engine_factory: Callable[..., ApiRuntime], *, ports: int, limit: int
) -> tuple[ApiRuntime, list[str], str, list[Any]]:
    """A router/port engine with ``ports`` queued validations, the first ``limit`` of them
    claimed under a new lease token: the engine, the ports, the token and the claimed batches."""
    engine = engine_factory(ROUTER_PORT)
    queue = engine.processing.runner.queue
    made = _ports(engine, ports)
    owner = queue.new_owner("w")
    return engine, made, owner, queue.claim_validations(engine.context(None).env_id, owner, limit=limit)


def test_a_round_claims_the_next_requests_in_its_own_transaction(
    engine_factory: Callable[..., ApiRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five queued validations, claimed two at a time: one claim transaction, then each round's
    apply claims the next two; every one is validated, in order."""
    engine, ports, owner, first = _first_claim(engine_factory, ports=5, limit=2)
    ctx = engine.context(None)
    runner = engine.processing.runner
    queue = runner.queue
    real_claim = queue.claim_validations
    alone: list[int] = []

    def claim(*args: Any, session: Any = None, **kwargs: Any) -> Any:
        if session is None:
            alone.append(1)
        return real_claim(*args, session=session, **kwargs)

    monkeypatch.setattr(queue, "claim_validations", claim)
    taken_on: list[list[str]] = []

    left = runner.validations.run(
        ctx,
        first,
        more=lambda session: queue.claim_validations(ctx.env_id, owner, limit=2, session=session),
        claimed=lambda batches: taken_on.append([str(b.leader.instance_id) for b in batches]),
    )

    assert left == [] and alone == []  # no claim had a transaction of its own
    assert taken_on == [ports[2:4], ports[4:5]]
    reports = validation_reports(engine)
    batches = [(reports[p]["batch"]["size"], reports[p]["batch"]["round"]) for p in ports]
    assert batches == [(2, 1)] * 4 + [(1, 1)]  # each claim is a batch of its own in the reports
    for port_id in ports:
        assert (
            engine.facades.inventory.get_instance(RequestContext.local(), "port", port_id).state == "creating"
        )


def test_a_claim_made_in_a_round_is_rolled_back_with_it(engine_factory: Callable[..., ApiRuntime]) -> None:
    """The round's transaction fails after its claim: the claimed requests stay queued for
    anyone, nobody is told they were taken, and the round's own requests stay running."""
    engine, ports, owner, first = _first_claim(engine_factory, ports=3, limit=1)
    ctx = engine.context(None)
    runner = engine.processing.runner
    queue = runner.queue
    grabbed: list[str] = []
    told: list[Any] = []

    def more_then_fail(session: Any) -> list[Any]:
        batches = queue.claim_validations(ctx.env_id, owner, limit=5, session=session)
        grabbed.extend(b.leader.id for b in batches)
        raise RuntimeError("disk gone after the claim")

    with pytest.raises(RuntimeError, match="disk gone"):
        runner.validations.run(ctx, first, more=more_then_fail, claimed=told.append)

    assert len(grabbed) == 2 and told == []
    assert _status(engine, grabbed) == ["queued", "queued"]
    assert _status(engine, [first[0].leader.id]) == ["running"]
    stored = engine.facades.inventory.get_instance(RequestContext.local(), "port", ports[0])
    assert stored.state == "start"  # the round's outcome was rolled back too


def test_a_validation_work_takes_on_more_until_its_bound_or_the_loop_stops(
    engine_factory: Callable[..., ApiRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsm.compiler import service as service_module

    engine = engine_factory(ROUTER_PORT)
    compiles = engine.processing.compiles
    engine.facades.environments.set_setting(RequestContext.local(), "validation_batch", 1)
    ports = _ports(engine, 6, settle=True)
    monkeypatch.setattr(service_module, "MAX_CONTINUED", 2)

    work = compiles.claim()
    assert isinstance(work, service_module.ValidationWork)
    work.run()
    assert work.continued == 2 and len(work.batches) == 3  # its claim, then two more in rounds
    assert all(b.leader.id in work.done for b in work.batches)
    states = [engine.facades.inventory.get_instance(RequestContext.local(), "port", p).state for p in ports]
    assert states == ["creating"] * 3 + ["start"] * 3

    compiles.stopping = lambda: True
    work = compiles.claim()
    while isinstance(work, service_module.ExportWork):  # the exporting compile of those three
        work.run()
        work = compiles.claim()
    assert isinstance(work, service_module.ValidationWork)
    work.run()
    assert work.continued == 0 and len(work.batches) == 1  # a stopping loop: nothing more
