"""examples/tunnel_lsm: the TunnelSelector of the Inmanta LSM docs, pasted with only its import
lines changed, drives partial compiles through the whole life of a tunnel (every backend)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsm.facade import RequestContext
from lsm.orchestration import ResourceOutcome
from lsm.runtime.wiring import ApiRuntime
from tests.compiler.test_partial_equals_full import assert_partial_equals_full

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "tunnel_lsm")


def deploy(engine: ApiRuntime, entity: str, instance_id: str) -> str:
    instance = engine.facades.inventory.get_instance(RequestContext.local(), entity, instance_id)
    outcome = ResourceOutcome(instance.id, instance.desired_state_version, True)
    engine.orchestrator.execute(engine.context(None), outcome)
    engine.processing.drain()
    return engine.facades.inventory.get_instance(RequestContext.local(), entity, instance_id).state


def latest_sets(engine: ApiRuntime) -> dict[str, list[str]]:
    version = engine.facades.desired_state.list_desired_states(RequestContext.local(), limit=1)[0].version
    sets: dict[str, list[str]] = engine.facades.desired_state.desired_state(
        RequestContext.local(), version
    ).sets
    return sets


def last_export_report(engine: ApiRuntime) -> dict[str, object]:
    last = next(
        c
        for c in engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000)
        if c.kind != "validation"
    )
    assert last.status == "success", last.report
    return last.report


def test_the_pasted_lsm_tunnel_selector_runs_a_tunnel_through_its_life(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(EXAMPLE, selector="TunnelSelector")
    assert "TunnelSelector" in [
        s["name"] for s in engine.facades.compiles.list_selectors(RequestContext.local())
    ]
    ports = [
        engine.facades.inventory.create_instance(RequestContext.local(), "port", {"name": f"eth{i}"}).id
        for i in range(3)
    ]
    engine.processing.drain()
    tunnel = engine.facades.inventory.create_instance(
        RequestContext.local(), "tunnel", {"tunnel_id": "t1", "ports": ports[:2]}
    ).id
    engine.processing.drain()
    assert engine.facades.inventory.get_instance(RequestContext.local(), "tunnel", tunnel).state == "creating"
    assert latest_sets(engine) == {
        tunnel: ["net::TunnelEndpoint[internal,name=t1 eth0]", "net::TunnelEndpoint[internal,name=t1 eth1]"]
    }
    selection = last_export_report(engine)["selection"]
    assert isinstance(selection, dict) and selection["selector"] == "TunnelSelector"
    assert selection["added"] == {tunnel: {ports[0]: "relation", ports[1]: "relation"}}
    assert_partial_equals_full(engine, None)

    for port in ports:
        assert deploy(engine, "port", port) == "up"
    assert deploy(engine, "tunnel", tunnel) == "up"
    instance = engine.facades.inventory.get_instance(RequestContext.local(), "tunnel", tunnel)
    engine.facades.inventory.delete_instance(
        RequestContext.local(), "tunnel", tunnel, current_version=instance.version
    )
    engine.processing.drain()
    assert engine.facades.inventory.get_instance(RequestContext.local(), "tunnel", tunnel).state == "deleting"
    assert deploy(engine, "tunnel", tunnel) == "terminated"
    # the seed hands back the terminated tunnel: it is dropped, and its set is removed
    report = last_export_report(engine)
    assert report["sets_deleted"] == [tunnel]
    assert latest_sets(engine) == {}
    assert_partial_equals_full(engine, None)
