"""examples/tunnel_lsm: the TunnelSelector of the Inmanta LSM docs, pasted with only its import
lines changed, drives partial compiles through the whole life of a tunnel (every backend)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsm.orchestration import ResourceOutcome
from lsm.runtime.engine import Engine
from tests.compiler.test_partial_equals_full import assert_partial_equals_full

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "tunnel_lsm")


def deploy(engine: Engine, entity: str, instance_id: str) -> str:
    instance = engine.get_instance(None, entity, instance_id)
    outcome = ResourceOutcome(instance.id, instance.desired_state_version, True)
    engine.orchestrator.execute(engine.context(None), outcome)
    engine.worker.drain()
    return engine.get_instance(None, entity, instance_id).state


def latest_sets(engine: Engine) -> dict[str, list[str]]:
    version = engine.list_desired_states(None, limit=1)[0]["version"]
    sets: dict[str, list[str]] = engine.desired_state(None, version)["sets"]
    return sets


def last_export_report(engine: Engine) -> dict[str, object]:
    last = next(c for c in engine.list_compiles(None, limit=1000) if c.kind != "validation")
    assert last.status == "success", last.report
    return last.report


def test_the_pasted_lsm_tunnel_selector_runs_a_tunnel_through_its_life(
    engine_factory: Callable[..., Engine],
) -> None:
    engine = engine_factory(EXAMPLE, selector="TunnelSelector")
    assert "TunnelSelector" in [s["name"] for s in engine.list_selectors(None)]
    ports = [engine.create_instance(None, "port", {"name": f"eth{i}"}).id for i in range(3)]
    engine.worker.drain()
    tunnel = engine.create_instance(None, "tunnel", {"tunnel_id": "t1", "ports": ports[:2]}).id
    engine.worker.drain()
    assert engine.get_instance(None, "tunnel", tunnel).state == "creating"
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
    instance = engine.get_instance(None, "tunnel", tunnel)
    engine.delete_instance(None, "tunnel", tunnel, current_version=instance.version)
    engine.worker.drain()
    assert engine.get_instance(None, "tunnel", tunnel).state == "deleting"
    assert deploy(engine, "tunnel", tunnel) == "terminated"
    # the seed hands back the terminated tunnel: it is dropped, and its set is removed
    report = last_export_report(engine)
    assert report["sets_deleted"] == [tunnel]
    assert latest_sets(engine) == {}
    assert_partial_equals_full(engine, None)
