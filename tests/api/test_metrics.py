"""``GET /metrics`` through the real app (uvicorn on 127.0.0.1), on both backends, after real
compiles and real deploys (tests/deploy/file_model.py writes real files; ``FAULTS`` makes its
handler fail). The exposition is parsed with ``prometheus_client.parser``; every value is
compared with what the engine's own tables and routes say."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select, text, update
from sqlmodel import col

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy.tables import lsm_resource_action
from lsm.store.tables import CompileRow
from lsm.store.webhooks import statements as webhooks
from lsm.store.webhooks.statements import NewDelivery
from lsm.store.webhooks.tables import lsm_webhook_delivery
from lsm.testing import served_url
from tests.deploy import file_model

LOCAL = RequestContext.local()
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture(autouse=True)
def _clean_faults() -> Iterator[None]:
    file_model.FAULTS.clear()
    yield
    file_model.FAULTS.clear()


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> ApiRuntime:
    return engine_factory(
        "tests.deploy.file_model", embedded_agent=True, config={"state_dir": str(tmp_path / "state")}
    )


@pytest.fixture
def http(engine: ApiRuntime) -> Iterator[httpx.Client]:
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def scrape(http: httpx.Client) -> tuple[Samples, dict[str, str]]:
    """Every sample of one scrape by (name, labels), and each family's type."""
    response = http.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(response.text):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset({"environment": "default", **labels}.items())))


def matching(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def ran_compiles(engine: ApiRuntime) -> Counter[tuple[str, str]]:
    """(kind, status) of the compiles that ran (not those merged into another), from the history."""
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(col(CompileRow.kind), col(CompileRow.status), func.count())
            .where(col(CompileRow.merged_into).is_(None), col(CompileRow.status).in_(("success", "failed")))
            .group_by(CompileRow.kind, CompileRow.status)
        )
        return Counter({(r[0], r[1]): r[2] for r in rows})


def logged_actions(engine: ApiRuntime) -> Counter[tuple[str, str, str]]:
    t = lsm_resource_action
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(t.c.agent, t.c.resource_id, t.c.action).where(t.c.dry_run.is_(False))
        )
        return Counter((r[0], r[1].split("[", 1)[0], r[2]) for r in rows)


def test_an_idle_engine_scrapes_zero_queues_and_no_counters(http: httpx.Client) -> None:
    samples, types = scrape(http)
    for kind in ("full", "partial", "validation"):
        assert value(samples, "lsm_compile_queue_depth", kind=kind) == 0
        assert value(samples, "lsm_compile_queue_oldest_age_seconds", kind=kind) == 0
        assert value(samples, "lsm_compile_running", kind=kind) == 0
    assert matching(samples, "lsm_compiles_total") == {}
    assert matching(samples, "lsm_instances") == {}
    assert types["lsm_compiles"] == "counter"
    assert types["lsm_compile_stage_seconds"] == "summary"
    assert types["lsm_deploy_actions"] == "counter"
    assert types["lsm_instances"] == "gauge"
    assert types["lsm_webhook_deliveries_failed"] == "gauge"
    assert not any(matching(samples, "lsm_webhook_deliveries_failed").values())  # no webhook yet


def test_queued_compiles_show_their_depth_and_age(engine: ApiRuntime, http: httpx.Client) -> None:
    router = engine.facades.inventory.create_instance(LOCAL, "router", {"name": "r1"})
    engine.facades.inventory.create_instance(LOCAL, "port", {"name": "eth0", "router": router.id})
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(col(CompileRow.kind), func.count())
            .where(col(CompileRow.status) == "queued")
            .group_by(CompileRow.kind)
        )
        queued = Counter({r[0]: r[1] for r in rows})
    assert sum(queued.values()) > 0
    samples, _ = scrape(http)
    for kind in ("full", "partial", "validation"):
        assert value(samples, "lsm_compile_queue_depth", kind=kind) == queued[kind]
        age = value(samples, "lsm_compile_queue_oldest_age_seconds", kind=kind)
        assert age is not None and (age > 0 if queued[kind] else age == 0)


def test_compiles_deploys_and_failures_are_counted_after_a_real_run(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    file_model.FAULTS["routers/r1.conf"] = -1  # r1's file always fails: its port is skipped
    inventory = engine.facades.inventory
    r1 = inventory.create_instance(LOCAL, "router", {"name": "r1"})
    inventory.create_instance(LOCAL, "port", {"name": "eth0", "router": r1.id})
    r2 = inventory.create_instance(LOCAL, "router", {"name": "r2"})
    inventory.create_instance(LOCAL, "port", {"name": "eth0", "router": r2.id})
    engine.processing.drain()

    samples, _ = scrape(http)
    ran = ran_compiles(engine)
    assert ran and sum(ran.values()) >= 2
    assert {
        (dict(labels)["kind"], dict(labels)["status"]): v
        for labels, v in matching(samples, "lsm_compiles_total").items()
    } == ran
    for kind in {k for k, _ in ran}:
        runs = sum(n for (k, _), n in ran.items() if k == kind)
        assert value(samples, "lsm_compile_stage_seconds_count", kind=kind, stage="total") == runs
        total = value(samples, "lsm_compile_stage_seconds_sum", kind=kind, stage="total")
        assert total is not None and total > 0
    stages = {
        dict(labels)["kind"] + ":" + dict(labels)["stage"]
        for labels in matching(samples, "lsm_compile_stage_seconds_count")
    }
    assert {"partial:select", "partial:export", "partial:total", "validation:total"} <= stages, stages

    states = {
        (dict(labels)["entity"], dict(labels)["state"]): v
        for labels, v in matching(samples, "lsm_instances").items()
    }
    assert states == {("router", "failed"): 1, ("port", "failed"): 1, ("router", "up"): 1, ("port", "up"): 1}
    resources = {dict(labels)["status"]: v for labels, v in matching(samples, "lsm_resources").items()}
    assert resources == {"deployed": 2, "failed": 1, "skipped": 1}
    latest = engine.facades.desired_state.list_desired_states(LOCAL)[0].version
    assert value(samples, "lsm_desired_state_version") == latest

    logged = logged_actions(engine)
    assert logged[("routers", "test::File", "error")] >= 1 and logged[("ports", "test::File", "skip")] == 1
    actions = {
        (dict(labels)["agent"], dict(labels)["resource_type"], dict(labels)["action"]): v
        for labels, v in matching(samples, "lsm_deploy_actions_total").items()
    }
    assert actions == logged
    failures = {
        (dict(labels)["agent"], dict(labels)["resource_type"]): v
        for labels, v in matching(samples, "lsm_deploy_failures_total").items()
    }
    assert failures == {("routers", "test::File"): logged[("routers", "test::File", "error")]}
    assert (value(samples, "lsm_agent_leases") or 0) >= 1
    assert (matching(samples, "lsm_agent_processes") or {frozenset(): 0}).popitem()[1] >= 1


def test_counters_never_go_down_when_old_versions_are_pruned(engine: ApiRuntime, http: httpx.Client) -> None:
    inventory = engine.facades.inventory
    router = inventory.create_instance(LOCAL, "router", {"name": "r1"})
    engine.processing.drain()
    for motd in ("a", "b", "c"):
        current = inventory.get_instance(LOCAL, "router", router.id)
        inventory.update_instance(
            LOCAL, "router", router.id, current_version=current.version, attributes={"motd": motd}
        )
        engine.processing.drain()
    before, _ = scrape(http)
    env_id = engine.context(None).env_id
    engine.core.store.collect_garbage(env_id, keep=1)
    with engine.db.write() as session:  # the history goes too: the counters do not read it
        session.connection().execute(text("DELETE FROM lsm_compile"))
        session.connection().execute(text("DELETE FROM lsm_resource_action"))
    after, _ = scrape(http)
    for name in ("lsm_compiles_total", "lsm_compile_stage_seconds_count", "lsm_deploy_actions_total"):
        assert matching(before, name), name
        assert matching(after, name) == matching(before, name), name


def test_failed_and_retrying_webhook_deliveries_are_counted(engine: ApiRuntime, http: httpx.Client) -> None:
    env_id = engine.context(None).env_id
    rows = [("failed", 5), ("failed", 5), ("delivered", 2), ("pending", 0), ("pending", 1), ("pending", 3)]
    now = datetime.now(UTC)
    with engine.db.write() as session:
        conn = session.connection()
        hook = webhooks.create(
            conn,
            env_id=env_id,
            url="http://127.0.0.1:9/",
            events=["instance_state"],
            secret="s",
            cursor="",
            created_by="test",
            now=now,
        )
        queued = [
            NewDelivery("instance_state", f"instance_state:{n}", {"n": n}, f"d{n}") for n in range(len(rows))
        ]
        webhooks.insert_deliveries(conn, hook["id"], queued, env_id=env_id, now=now)
        for n, (status, attempts) in enumerate(rows):
            conn.execute(
                update(lsm_webhook_delivery)
                .where(lsm_webhook_delivery.c.id == f"d{n}")
                .values(status=status, attempts=attempts)
            )
    samples, types = scrape(http)
    assert types["lsm_webhook_deliveries_failed"] == "gauge"
    assert value(samples, "lsm_webhook_deliveries_failed") == 2
    assert value(samples, "lsm_webhook_deliveries_retrying") == 2  # pending after a failed attempt


def test_a_failed_compile_is_counted_as_failed(engine_factory: Callable[..., ApiRuntime]) -> None:
    fragile = engine_factory("tests.models.fragile")
    fragile.facades.inventory.import_instances(LOCAL, "widget", "up", [{"name": "w1", "explode": True}])
    fragile.facades.compiles.request_compile(LOCAL, kind="full")
    fragile.processing.drain()
    with served_url(fragile) as base, httpx.Client(base_url=base, timeout=30) as client:
        samples, _ = scrape(client)
    assert value(samples, "lsm_compiles_total", kind="full", status="failed") == 1
    assert value(samples, "lsm_compiles_total", kind="full", status="success") is None
    assert value(samples, "lsm_instances", entity="widget", state="up") == 1
