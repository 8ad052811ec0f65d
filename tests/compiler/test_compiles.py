"""Compiles through the engine: full, partial, validation, batching, failures, crash resume."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsm.inventory.tables import CompileRow
from lsm.runtime.engine import Engine

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
NETWORKS = str(EXAMPLES / "networks")
ROUTER_PORT = str(EXAMPLES / "router_port")


def full_compile(engine: Engine) -> int:
    out = engine.request_compile(None, kind="full")
    engine.worker.drain()
    done = engine.get_compile(None, out.id)
    assert done.status == "success", done.report
    assert done.desired_state_version is not None
    return done.desired_state_version


def seed_networks(engine: Engine, count: int, hosts: int = 5) -> list[str]:
    return engine.import_instances(
        None, "network", "up", [{"name": f"net{i}", "hosts": hosts} for i in range(count)]
    )


def test_networks_1000_by_5_give_1000_sets_and_one_shared(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS, partial_compiles=False)
    ids = seed_networks(engine, 1000)
    version = full_compile(engine)
    content = engine.store.content(engine.context(None).env_id, version)
    assert set(content.sets) == set(ids)
    assert {len(resources) for resources in content.sets.values()} == {5}
    assert content.shared == ["net::AgentConfig[internal,name=networks]"]
    assert engine.desired_state(None, version)["resource_count"] == 5001


def test_full_recompile_after_one_change_changes_exactly_one_set(
    engine_factory: Callable[..., Engine],
) -> None:
    engine = engine_factory(NETWORKS, partial_compiles=False)
    ids = seed_networks(engine, 200)
    env_id = engine.context(None).env_id
    first = full_compile(engine)
    before = engine.store.set_revisions(env_id, first)
    changed = engine.get_instance(None, "network", ids[17])
    engine.update_instance(
        None, "network", changed.id, current_version=changed.version, attributes={"hosts": 7}
    )
    engine.worker.drain()  # validation, promote, then the exporting compile the promote requested
    assert engine.get_instance(None, "network", changed.id).state == "update_inprogress"
    second = full_compile(engine)
    after = engine.store.set_revisions(env_id, second)
    assert {name for name in after if after[name] != before.get(name)} == {changed.id}
    assert len(engine.store.content(env_id, second).sets[changed.id]) == 7


def test_simple_instances_go_start_acknowledged_creating(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS)
    created = engine.create_instance(None, "network", {"name": "n1", "hosts": 2})
    engine.worker.drain()
    now = engine.get_instance(None, "network", created.id)
    assert now.state == "creating"
    steps = [(e.source, e.target) for e in engine.instance_log(None, "network", created.id)]
    assert steps == [(None, "start"), ("start", "acknowledged"), ("acknowledged", "creating")]
    latest = engine.list_desired_states(None)[0]
    content = engine.desired_state(None, latest["version"])
    assert sorted(content["sets"][created.id]) == ["net::Host[n1,name=h0]", "net::Host[n1,name=h1]"]


def test_failed_validation_rejects_with_the_compile_report_in_the_log(
    engine_factory: Callable[..., Engine],
) -> None:
    engine = engine_factory(ROUTER_PORT)
    router = engine.create_instance(None, "router", {"mgmt_ip": "10.0.0.1", "name": "r1"})
    engine.worker.drain()
    port = engine.create_instance(None, "port", {"router": router.id, "name": "eth0", "mtu": 10})
    engine.worker.drain()
    rejected = engine.get_instance(None, "port", port.id)
    assert rejected.state == "rejected"
    last = engine.instance_log(None, "port", port.id)[-1]
    assert (last.source, last.target, last.is_error) == ("start", "rejected", True)
    assert last.compile_id is not None
    report = engine.get_compile(None, last.compile_id)
    assert (report.kind, report.status, report.instance_id) == ("validation", "failed", port.id)
    assert port.id in report.report["error"]["message"]
    assert "mtu" in report.report["error"]["message"]
    # the router was not touched by the port's failure
    assert engine.get_instance(None, "router", router.id).state == "creating"


def test_model_error_fails_the_export_and_keeps_the_previous_version(
    engine_factory: Callable[..., Engine],
) -> None:
    engine = engine_factory("tests.models.fragile")
    engine.import_instances(None, "widget", "up", [{"name": "w1"}, {"name": "w2"}])
    version = full_compile(engine)
    engine.import_instances(None, "widget", "up", [{"name": "w3", "explode": True}])
    failed = engine.request_compile(None, kind="full")
    engine.worker.drain()
    report = engine.get_compile(None, failed.id)
    assert report.status == "failed"
    error = report.report["error"]
    assert error["error"] == "model_error"
    assert "widget w3 exploded" in error["message"]
    assert "fragile.py" in error["message"] or "fragile.py" in str(error.get("errors"))
    assert engine.list_desired_states(None)[0]["version"] == version


def test_pending_partial_requests_are_batched_into_one_compile(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS)
    ids = seed_networks(engine, 10)
    base = full_compile(engine)
    requests = [engine.request_compile(None, kind="partial", instance_ids=[i]) for i in ids[:4]]
    engine.worker.drain()
    reports = [engine.get_compile(None, r.id) for r in requests]
    leader = reports[0]
    assert leader.merged_into is None and leader.status == "success"
    assert all(r.merged_into == leader.id and r.status == "success" for r in reports[1:])
    assert {r.desired_state_version for r in reports} == {base + 1}
    assert set(leader.report["selected"]["network"]) == set(ids[:4])


def test_batching_off_runs_one_compile_per_request(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS, batched_partial_compiles=False)
    ids = seed_networks(engine, 3)
    base = full_compile(engine)
    requests = [engine.request_compile(None, kind="partial", instance_ids=[i]) for i in ids]
    engine.worker.drain()
    versions = sorted(engine.get_compile(None, r.id).desired_state_version or 0 for r in requests)
    assert versions == [base + 1, base + 2, base + 3]


def test_a_compile_left_running_by_a_dead_worker_is_resumed(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS)
    seed_networks(engine, 3)
    orphan = CompileRow(env_id=engine.context(None).env_id, kind="full", status="running", reason="crashed")
    with engine.db.write() as session:
        session.add(orphan)
    engine.worker.drain()
    resumed = engine.get_compile(None, orphan.id)
    assert resumed.status == "success"
    assert resumed.desired_state_version == 1


def test_embedded_worker_and_wait(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS, embedded_worker=True)
    seed_networks(engine, 5)
    done = engine.request_compile(None, kind="full", wait=True, timeout=60)
    assert done.status == "success"
    assert engine.desired_state(None, done.desired_state_version or 0)["resource_count"] == 26


def test_instance_resources_follow_the_latest_desired_state(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(ROUTER_PORT)
    router = engine.create_instance(None, "router", {"mgmt_ip": "10.0.0.9", "name": "r9"})
    engine.worker.drain()
    port = engine.create_instance(None, "port", {"router": router.id, "name": "eth0"})
    engine.worker.drain()
    resources = engine.instance_resources(None, "port", port.id)
    assert [r["id"] for r in resources] == ["net::Interface[10.0.0.9,name=eth0]"]
    assert resources[0]["set"] == router.id
    latest = engine.list_desired_states(None)[0]["version"]
    assert resources[0]["desired_state_version"] == latest
    assert [r["id"] for r in engine.instance_resources(None, "router", router.id)] == [
        "net::Router[10.0.0.9,name=r9]"
    ]


def test_import_with_a_taken_identity_is_a_conflict_and_imports_nothing(
    engine_factory: Callable[..., Engine],
) -> None:
    import pytest

    from lsm.errors import Conflict

    engine = engine_factory(NETWORKS)
    seed_networks(engine, 2)
    with pytest.raises(Conflict):
        engine.import_instances(None, "network", "up", [{"name": "fresh"}, {"name": "net1"}])
    assert (
        engine.list_instances(None, "network", limit=10) and len(engine.list_instances(None, "network")) == 2
    )


def test_old_desired_state_versions_are_garbage_collected(engine_factory: Callable[..., Engine]) -> None:
    import pytest

    from lsm.errors import UnknownVersion

    engine = engine_factory(NETWORKS, desired_state_retention=3)
    ids = seed_networks(engine, 3)
    full_compile(engine)
    for i in range(9):
        engine.request_compile(None, kind="partial", instance_ids=[ids[i % 3]])
        engine.worker.drain()
    versions = [v["version"] for v in engine.list_desired_states(None)]
    assert versions == [10, 9, 8]
    with pytest.raises(UnknownVersion):
        engine.desired_state(None, 1)
    assert engine.desired_state(None, 8)["resource_count"] == 16


def test_import_checks_relations_in_one_batch_and_logs_each_instance(
    engine_factory: Callable[..., Engine],
) -> None:
    import uuid

    import pytest

    from lsm.errors import InvalidAttributes

    engine = engine_factory(ROUTER_PORT)
    (router,) = engine.import_instances(None, "router", "up", [{"mgmt_ip": "10.1.0.1", "name": "r"}])
    missing = str(uuid.uuid4())
    with pytest.raises(InvalidAttributes) as err:
        engine.import_instances(
            None, "port", "up", [{"router": router, "name": "eth0"}, {"router": missing, "name": "eth1"}]
        )
    assert err.value.errors == [{"path": "[1].router", "reason": f"no live router instance {missing}"}]
    assert engine.list_instances(None, "port") == []
    (port,) = engine.import_instances(None, "port", "up", [{"router": router, "name": "eth0"}])
    log = engine.instance_log(None, "port", port)
    assert [(e.source, e.target, e.trigger) for e in log] == [(None, "up", "import")]
    assert engine.get_instance(None, "port", port).owner == router


def test_recompile_backoff_holds_exports_but_never_validations(engine_factory: Callable[..., Engine]) -> None:
    engine = engine_factory(NETWORKS, recompile_backoff=3600)
    ids = seed_networks(engine, 2)
    waiting = engine.request_compile(None, kind="full")
    created = engine.create_instance(None, "network", {"name": "late"})
    engine.worker.drain()
    assert engine.get_compile(None, waiting.id).status == "queued"  # within its back-off
    assert engine.get_instance(None, "network", created.id).state == "creating"  # validated meanwhile
    engine.set_setting(None, "recompile_backoff", 0)
    engine.worker.drain()
    assert engine.get_compile(None, waiting.id).status == "success"
    assert set(engine.desired_state(None, engine.list_desired_states(None)[0]["version"])["sets"]) == {
        *ids,
        created.id,
    }
