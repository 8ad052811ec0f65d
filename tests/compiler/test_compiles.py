"""Compiles through the engine: full, partial, validation, batching, failures, crash resume."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from lsm.compiler import runner, shared_records
from lsm.desired_state.merge import ExportCheck
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.database import Database
from lsm.store.tables import CompileRow

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
NETWORKS = str(EXAMPLES / "networks")
ROUTER_PORT = str(EXAMPLES / "router_port")


def full_compile(engine: ApiRuntime) -> int:
    out = engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(), out.id)
    assert done.status == "success", done.report
    assert done.desired_state_version is not None
    return done.desired_state_version


def seed_networks(engine: ApiRuntime, count: int, hosts: int = 5) -> list[str]:
    return engine.facades.inventory.import_instances(
        RequestContext.local(), "network", "up", [{"name": f"net{i}", "hosts": hosts} for i in range(count)]
    )


def test_networks_1000_by_5_give_1000_sets_and_one_shared(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS, partial_compiles=False)
    ids = seed_networks(engine, 1000)
    version = full_compile(engine)
    content = engine.store.content(engine.context(None).env_id, version)
    assert set(content.sets) == set(ids)
    assert {len(resources) for resources in content.sets.values()} == {5}
    assert content.shared == ["net::AgentConfig[internal,name=networks]"]
    assert engine.facades.desired_state.desired_state(RequestContext.local(), version).resource_count == 5001


def test_full_recompile_after_one_change_changes_exactly_one_set(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS, partial_compiles=False)
    ids = seed_networks(engine, 200)
    env_id = engine.context(None).env_id
    first = full_compile(engine)
    before = engine.store.set_revisions(env_id, first)
    changed = engine.facades.inventory.get_instance(RequestContext.local(), "network", ids[17])
    engine.facades.inventory.update_instance(
        RequestContext.local(),
        "network",
        changed.id,
        current_version=changed.version,
        attributes={"hosts": 7},
    )
    engine.processing.drain()  # validation, promote, then the exporting compile the promote requested
    assert (
        engine.facades.inventory.get_instance(RequestContext.local(), "network", changed.id).state
        == "update_inprogress"
    )
    second = full_compile(engine)
    after = engine.store.set_revisions(env_id, second)
    assert {name for name in after if after[name] != before.get(name)} == {changed.id}
    assert len(engine.store.content(env_id, second).sets[changed.id]) == 7


def test_simple_instances_go_start_acknowledged_creating(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS)
    created = engine.facades.inventory.create_instance(
        RequestContext.local(), "network", {"name": "n1", "hosts": 2}
    )
    engine.processing.drain()
    now = engine.facades.inventory.get_instance(RequestContext.local(), "network", created.id)
    assert now.state == "creating"
    steps = [
        (e.source, e.target)
        for e in engine.facades.inventory.instance_log(RequestContext.local(), "network", created.id)
    ]
    assert steps == [(None, "start"), ("start", "acknowledged"), ("acknowledged", "creating")]
    latest = engine.facades.desired_state.list_desired_states(RequestContext.local())[0]
    content = engine.facades.desired_state.desired_state(RequestContext.local(), latest.version)
    assert sorted(content.sets[created.id]) == ["net::Host[n1,name=h0]", "net::Host[n1,name=h1]"]


def test_failed_validation_rejects_with_the_compile_report_in_the_log(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(ROUTER_PORT)
    router = engine.facades.inventory.create_instance(
        RequestContext.local(), "router", {"mgmt_ip": "10.0.0.1", "name": "r1"}
    )
    engine.processing.drain()
    port = engine.facades.inventory.create_instance(
        RequestContext.local(), "port", {"router": router.id, "name": "eth0", "mtu": 10}
    )
    engine.processing.drain()
    rejected = engine.facades.inventory.get_instance(RequestContext.local(), "port", port.id)
    assert rejected.state == "rejected"
    last = engine.facades.inventory.instance_log(RequestContext.local(), "port", port.id)[-1]
    assert (last.source, last.target, last.is_error) == ("start", "rejected", True)
    assert last.compile_id is not None
    report = engine.facades.compiles.get_compile(RequestContext.local(), last.compile_id)
    assert (report.kind, report.status, report.instance_id) == ("validation", "failed", port.id)
    assert port.id in report.report["error"]["message"]
    assert "mtu" in report.report["error"]["message"]
    # the router was not touched by the port's failure
    assert (
        engine.facades.inventory.get_instance(RequestContext.local(), "router", router.id).state == "creating"
    )


def test_model_error_fails_the_export_and_keeps_the_previous_version(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory("tests.models.fragile")
    engine.facades.inventory.import_instances(
        RequestContext.local(), "widget", "up", [{"name": "w1"}, {"name": "w2"}]
    )
    version = full_compile(engine)
    engine.facades.inventory.import_instances(
        RequestContext.local(), "widget", "up", [{"name": "w3", "explode": True}]
    )
    failed = engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
    engine.processing.drain()
    report = engine.facades.compiles.get_compile(RequestContext.local(), failed.id)
    assert report.status == "failed"
    error = report.report["error"]
    assert error["error"] == "model_error"
    assert "widget w3 exploded" in error["message"]
    assert "fragile.py" in error["message"] or "fragile.py" in str(error.get("errors"))
    assert engine.facades.desired_state.list_desired_states(RequestContext.local())[0].version == version


def test_pending_partial_requests_are_batched_into_one_compile(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    ids = seed_networks(engine, 10)
    base = full_compile(engine)
    requests = [
        engine.facades.compiles.request_compile(RequestContext.local(), kind="partial", instance_ids=[i])
        for i in ids[:4]
    ]
    engine.processing.drain()
    reports = [engine.facades.compiles.get_compile(RequestContext.local(), r.id) for r in requests]
    leader = reports[0]
    assert leader.merged_into is None and leader.status == "success"
    assert all(r.merged_into == leader.id and r.status == "success" for r in reports[1:])
    assert {r.desired_state_version for r in reports} == {base + 1}
    assert set(leader.report["selected"]["network"]) == set(ids[:4])


def test_an_export_encodes_before_it_takes_the_write_lock(
    engine_factory: Callable[..., ApiRuntime], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding the records, hashing the shared ones and building the per-instance index read
    nothing stored: done under the write lock, they kept the API's writers waiting."""
    engine = engine_factory(NETWORKS)
    ids = seed_networks(engine, 4)
    base = full_compile(engine)
    holding = threading.local()
    original_write = Database.write

    @contextmanager
    def write(self: Database, **options: Any) -> Iterator[Session]:
        with original_write(self, **options) as session:
            holding.depth = getattr(holding, "depth", 0) + 1
            try:
                yield session
            finally:
                holding.depth -= 1

    built: list[tuple[str, bool]] = []

    def spy(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def spied(*args: Any, **kwargs: Any) -> Any:
            built.append((name, getattr(holding, "depth", 0) > 0))
            return function(*args, **kwargs)

        return spied

    original_check = ExportCheck.__init__
    monkeypatch.setattr(Database, "write", write)
    monkeypatch.setattr(ExportCheck, "__init__", spy("encode", original_check))
    monkeypatch.setattr(shared_records, "shared_hashes", spy("hash", shared_records.shared_hashes))
    monkeypatch.setattr(runner, "instance_resource_rows", spy("index", runner.instance_resource_rows))
    outside = [("encode", False), ("hash", False), ("index", False)]
    partial = engine.facades.compiles.request_compile(
        RequestContext.local(), kind="partial", instance_ids=ids[:2]
    )
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(), partial.id)
    assert done.status == "success" and done.desired_state_version == base + 1
    assert sorted(built) == outside
    # a complete full compile (every set re-encoded: the largest export there is) alike
    built.clear()
    complete = engine.facades.compiles.request_compile(RequestContext.local(), kind="full", incremental=False)
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(), complete.id)
    assert done.status == "success" and done.desired_state_version == base + 2
    assert sorted(built) == outside


def test_batching_off_runs_one_compile_per_request(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS, batched_partial_compiles=False)
    ids = seed_networks(engine, 3)
    base = full_compile(engine)
    requests = [
        engine.facades.compiles.request_compile(RequestContext.local(), kind="partial", instance_ids=[i])
        for i in ids
    ]
    engine.processing.drain()
    versions = sorted(
        engine.facades.compiles.get_compile(RequestContext.local(), r.id).desired_state_version or 0
        for r in requests
    )
    assert versions == [base + 1, base + 2, base + 3]


def test_a_compile_left_running_by_a_dead_worker_is_resumed(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS)
    seed_networks(engine, 3)
    orphan = CompileRow(env_id=engine.context(None).env_id, kind="full", status="running", reason="crashed")
    with engine.db.write() as session:
        session.add(orphan)
    engine.processing.drain()
    resumed = engine.facades.compiles.get_compile(RequestContext.local(), orphan.id)
    assert resumed.status == "success"
    assert resumed.desired_state_version == 1


def test_embedded_worker_and_wait(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(NETWORKS, embedded_worker=True)
    seed_networks(engine, 5)
    done = engine.facades.compiles.request_compile(RequestContext.local(), kind="full", wait=True, timeout=60)
    assert done.status == "success"
    assert (
        engine.facades.desired_state.desired_state(
            RequestContext.local(), done.desired_state_version or 0
        ).resource_count
        == 26
    )


def test_instance_resources_follow_the_latest_desired_state(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(ROUTER_PORT)
    router = engine.facades.inventory.create_instance(
        RequestContext.local(), "router", {"mgmt_ip": "10.0.0.9", "name": "r9"}
    )
    engine.processing.drain()
    port = engine.facades.inventory.create_instance(
        RequestContext.local(), "port", {"router": router.id, "name": "eth0"}
    )
    engine.processing.drain()
    resources = engine.facades.inventory.instance_resources(RequestContext.local(), "port", port.id)
    assert [r.id for r in resources] == ["net::Interface[10.0.0.9,name=eth0]"]
    assert resources[0].set == router.id
    latest = engine.facades.desired_state.list_desired_states(RequestContext.local())[0].version
    assert resources[0].desired_state_version == latest
    assert [
        r.id for r in engine.facades.inventory.instance_resources(RequestContext.local(), "router", router.id)
    ] == ["net::Router[10.0.0.9,name=r9]"]


def test_import_with_a_taken_identity_is_a_conflict_and_imports_nothing(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    import pytest

    from lsm.errors import Conflict

    engine = engine_factory(NETWORKS)
    seed_networks(engine, 2)
    with pytest.raises(Conflict):
        engine.facades.inventory.import_instances(
            RequestContext.local(), "network", "up", [{"name": "fresh"}, {"name": "net1"}]
        )
    assert (
        engine.facades.inventory.list_instances(RequestContext.local(), "network", limit=10)
        and len(engine.facades.inventory.list_instances(RequestContext.local(), "network")) == 2
    )


def test_old_desired_state_versions_are_garbage_collected(engine_factory: Callable[..., ApiRuntime]) -> None:
    import pytest

    from lsm.errors import UnknownVersion

    engine = engine_factory(NETWORKS, desired_state_retention=3)
    ids = seed_networks(engine, 3)
    full_compile(engine)
    for i in range(9):
        engine.facades.compiles.request_compile(
            RequestContext.local(), kind="partial", instance_ids=[ids[i % 3]]
        )
        engine.processing.drain()
    versions = [v.version for v in engine.facades.desired_state.list_desired_states(RequestContext.local())]
    assert versions == [10, 9, 8]
    with pytest.raises(UnknownVersion):
        engine.facades.desired_state.desired_state(RequestContext.local(), 1)
    assert engine.facades.desired_state.desired_state(RequestContext.local(), 8).resource_count == 16


def test_import_checks_relations_in_one_batch_and_logs_each_instance(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    import uuid

    import pytest

    from lsm.errors import InvalidAttributes

    engine = engine_factory(ROUTER_PORT)
    (router,) = engine.facades.inventory.import_instances(
        RequestContext.local(), "router", "up", [{"mgmt_ip": "10.1.0.1", "name": "r"}]
    )
    missing = str(uuid.uuid4())
    with pytest.raises(InvalidAttributes) as err:
        engine.facades.inventory.import_instances(
            RequestContext.local(),
            "port",
            "up",
            [{"router": router, "name": "eth0"}, {"router": missing, "name": "eth1"}],
        )
    assert err.value.errors == [{"path": "[1].router", "reason": f"no live router instance {missing}"}]
    assert engine.facades.inventory.list_instances(RequestContext.local(), "port") == []
    (port,) = engine.facades.inventory.import_instances(
        RequestContext.local(), "port", "up", [{"router": router, "name": "eth0"}]
    )
    log = engine.facades.inventory.instance_log(RequestContext.local(), "port", port)
    assert [(e.source, e.target, e.trigger) for e in log] == [(None, "up", "import")]
    assert engine.facades.inventory.get_instance(RequestContext.local(), "port", port).owner == router


def test_recompile_backoff_holds_exports_but_never_validations(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(NETWORKS, recompile_backoff=3600)
    ids = seed_networks(engine, 2)
    waiting = engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
    created = engine.facades.inventory.create_instance(RequestContext.local(), "network", {"name": "late"})
    engine.processing.drain()
    assert (
        engine.facades.compiles.get_compile(RequestContext.local(), waiting.id).status == "queued"
    )  # within its back-off
    assert (
        engine.facades.inventory.get_instance(RequestContext.local(), "network", created.id).state
        == "creating"
    )  # validated meanwhile
    engine.facades.environments.set_setting(RequestContext.local(), "recompile_backoff", 0)
    engine.processing.drain()
    assert engine.facades.compiles.get_compile(RequestContext.local(), waiting.id).status == "success"
    assert set(
        engine.facades.desired_state.desired_state(
            RequestContext.local(),
            engine.facades.desired_state.list_desired_states(RequestContext.local())[0].version,
        ).sets
    ) == {
        *ids,
        created.id,
    }
