"""``diagnose``: one test per cause kind, each built as the real situation through the real app
(uvicorn on 127.0.0.1), on both backends: a model that raises for the validation, a handler
that fails with retries, a dependent resource on another agent, compiles queued behind a full
one, a compile lease left by a killed worker and one whose heartbeat stopped, a stale agent lease.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from lsm.cli import app
from lsm.compiler.queue import CompileQueue
from lsm.facade import RequestContext
from lsm.facade.diagnosis import Diagnosis, Situation, summary
from lsm.runtime.wiring import ApiRuntime
from lsm.services.leases import process_identity
from lsm.services.singleton import NAME as SQLITE_WORKER
from lsm.store import leases
from lsm.store.deploy.leases import lease_name
from lsm.store.tables import CompileRow, utcnow
from lsm.testing import served_url
from tests.diagnose import stuck_model
from tests.owners import dead_pid

MODEL_FILE = Path(stuck_model.__file__)
LOCAL = RequestContext.local()


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> ApiRuntime:
    """Compiles and deploys run when a test drains the loop (no background worker)."""
    return engine_factory(
        "tests.diagnose.stuck_model", embedded_agent=True, config={"state_dir": str(tmp_path / "state")}
    )


@pytest.fixture
def http(engine: ApiRuntime) -> Iterator[httpx.Client]:
    with served_url(engine) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def order(http: httpx.Client, entity: str, attributes: dict[str, Any]) -> str:
    answer = http.post(f"/lsm/v1/service_inventory/{entity}", json={"attributes": attributes})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


def diagnose(http: httpx.Client, entity: str, ref: str) -> dict[str, Any]:
    answer = http.get(f"/lsm/v1/service_inventory/{entity}/{ref}/diagnose")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def kinds(body: dict[str, Any]) -> list[str]:
    return [c["kind"] for c in body["cause"]]


def clock(at: str) -> str:
    return f"{datetime.fromisoformat(at.replace('Z', '+00:00')):%H:%M:%S} UTC"


def test_pending_compile_then_queued_behind_the_full_compile(engine: ApiRuntime, http: httpx.Client) -> None:
    router = order(http, "router", {"name": "r1"})
    waiting = diagnose(http, "router", router)
    assert kinds(waiting) == ["pending_compile"]
    assert waiting["cause"][0]["subject"] == {"type": "compile", "id": waiting["pending_compile"]["id"]}
    pending = waiting["pending_compile"]
    assert waiting["summary"] == (
        f"router r1 is in `start` because waiting for the validation compile {pending['id']}, "
        f"queued at {clock(pending['created_at'])}"
    )

    engine.processing.drain()  # validated, exported, deployed: up
    assert kinds(diagnose(http, "router", router)) == ["none"]
    full = http.post("/api/v1/compiles", json={"kind": "full"}).json()["id"]
    partial = http.post("/api/v1/compiles", json={"kind": "partial", "instance_ids": [router]}).json()["id"]
    behind = diagnose(http, "router", router)
    assert kinds(behind) == ["pending_compile", "pending_compile"]
    assert [c["subject"]["id"] for c in behind["cause"]] == [partial, full]
    assert behind["cause"][1]["message"] == f"queued behind the full compile {full}"
    assert behind["summary"].endswith(f"because queued behind the full compile {full}")


def test_failed_validation_names_the_model_line(engine: ApiRuntime, http: httpx.Client) -> None:
    widget = order(http, "widget", {"name": "w1", "explode": True})
    engine.processing.drain()
    body = diagnose(http, "widget", widget)

    assert body["state"] == "rejected" and kinds(body) == ["failed_validation"]
    cause = body["cause"][0]
    lines = MODEL_FILE.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if 'raise ValueError(f"widget' in line)
    location = cause["details"]["location"]
    # relative to the server's directory, or cut to its last two parts (no absolute server path)
    assert location["file"].endswith("diagnose/stuck_model.py") and not location["file"].startswith("/")
    assert (location["line"], location["function"]) == (number, "widget_device")
    assert location["source"] == lines[number - 1].strip()
    assert cause["subject"] == {"type": "validation", "id": body["validation_compile"]["id"]}
    assert "widget w1 exploded" in body["summary"] and f":{number}" in body["summary"]
    # the compile report carries the same location, for the console
    report = http.get(f"/api/v1/compiles/{body['validation_compile']['id']}").json()["report"]
    assert report["error"]["location"] == location


def test_failed_resource_says_which_retry_and_when(engine: ApiRuntime, http: httpx.Client) -> None:
    router = order(http, "router", {"name": "r1", "fail": True, "retries": 3})
    engine.processing.drain()
    body = diagnose(http, "router", router)

    assert kinds(body) == ["failed_resource"]
    cause = body["cause"][0]
    device = stuck_model.router_device("r1")
    assert cause["subject"] == {"type": "resource", "id": device}
    assert cause["details"] | {"error": None} == {
        "agent": "routers",
        "attempts": 1,
        "retry": 3,
        "error": None,
        "final": False,
    }
    assert "device router-r1 does not answer" in cause["details"]["error"]
    retry_at = datetime.fromisoformat(cause["at"].replace("Z", "+00:00"))
    assert timedelta(seconds=590) < retry_at - utcnow() <= timedelta(seconds=600)  # delay=600
    assert cause["message"].endswith(f"does not answer, retry 1 of 3 at {clock(cause['at'])}")
    assert body["summary"] == f"router r1 is in `creating` because {cause['message']}"


def test_skipped_dependency_walks_to_the_failed_root_across_agents(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    router = order(http, "router", {"name": "r2", "fail": True})
    port = order(http, "port", {"name": "eth0", "router": router})
    engine.processing.drain()
    body = diagnose(http, "port", port)

    assert kinds(body) == ["skipped_dependency", "failed_resource"]
    port_device = "test::Device[ports,name=port-r2-eth0]"
    router_device = stuck_model.router_device("r2")
    assert [c["subject"]["id"] for c in body["cause"]] == [port_device, router_device]
    assert body["cause"][0]["details"]["requires"] == [router_device]
    assert body["cause"][1]["details"]["final"] is True
    assert body["summary"] == (
        f"port eth0 is in `{body['state']}` because resource {port_device} is skipped because resource "
        f"{router_device} failed: HandlerError: device router-r2 does not answer"
    )


def _claim_full(engine: ApiRuntime, http: httpx.Client, owner: str, ttl: float) -> str:
    """A full compile claimed by ``owner`` (a worker that then stops), as the queue claims it."""
    http.post("/api/v1/compiles", json={"kind": "full"})
    batch = CompileQueue(engine.db, lease_ttl=ttl).claim_exporting(
        engine.context(None).env_id, owner, batched=True
    )
    assert batch is not None
    return batch.leader.id


def test_stale_compile_lock_of_a_killed_worker(engine: ApiRuntime, http: httpx.Client) -> None:
    router = order(http, "router", {"name": "r1"})
    engine.processing.drain()
    _, info = process_identity("worker")
    owner = f"worker@{info['host']}:{dead_pid()}:dead0000/claim1"
    full = _claim_full(engine, http, owner, ttl=3600)
    body = diagnose(http, "router", router)

    assert kinds(body) == ["pending_compile", "stale_lock"]
    stale = body["cause"][1]
    assert stale["subject"] == {"type": "lock", "id": f"compile:{full}"}
    assert stale["details"]["holder"] == owner
    assert (
        "whose process is gone" in stale["message"]
        and f"taken over at {clock(stale['at'])}" in stale["message"]
    )
    assert datetime.fromisoformat(stale["at"].replace("Z", "+00:00")) > utcnow()  # not expired yet


def test_stale_compile_lock_whose_heartbeat_stopped(engine: ApiRuntime, http: httpx.Client) -> None:
    router = order(http, "router", {"name": "r1"})
    engine.processing.drain()
    full = _claim_full(engine, http, "worker@elsewhere:1:abc/claim", ttl=0.2)
    deadline = time.monotonic() + 30
    while True:  # wait for the lease to run out (nobody renews it)
        with engine.db.read() as session:
            row = session.get(CompileRow, full)
            assert row is not None and row.lease_expires is not None
            expired = row.lease_expires.replace(tzinfo=None) < utcnow().replace(tzinfo=None)
        if expired or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    body = diagnose(http, "router", router)

    assert kinds(body) == ["pending_compile", "stale_lock"]
    assert body["cause"][0]["message"].startswith(f"waiting for the full compile {full}, running since")
    assert "whose heartbeat stopped" in body["cause"][1]["message"]
    assert "taken over by the next worker" in body["summary"]


def test_stale_agent_lease_of_a_killed_agent_holds_the_deploy(engine: ApiRuntime, http: httpx.Client) -> None:
    """The agent name's lease is still valid, but the process holding it was killed: the router's
    resource waits until an agent for that name looks (one of this host takes a gone holder's
    name at once; here the only agent serves other names) or the lease runs out."""
    agent = engine.processing.agent
    assert agent is not None
    agent.claiming.agents = {"ports"}
    env_id = engine.context(None).env_id
    _, info = process_identity("agent")
    pid = dead_pid()
    holder = f"agent@{info['host']}:{pid}:dead0000"
    with engine.db.write() as session:  # the lease the killed agent process left behind
        leases.acquire(
            session,
            lease_name(env_id, "routers"),
            holder,
            now=utcnow(),
            ttl=3600,
            info={"host": info["host"], "pid": pid, "role": "agent"},
        )
    router = order(http, "router", {"name": "r1"})
    engine.processing.drain()
    body = diagnose(http, "router", router)

    assert body["state"] == "creating" and kinds(body) == ["deploying", "stale_lock"]
    assert body["cause"][0]["subject"] == {"type": "resource", "id": stuck_model.router_device("r1")}
    stale = body["cause"][1]
    assert stale["subject"] == {"type": "lock", "id": lease_name(env_id, "routers")}
    assert stale["details"]["holder"] == holder
    assert (
        "whose process is gone" in stale["message"]
        and f"taken over at {clock(stale['at'])}" in stale["message"]
    )


def test_healthy_and_moving_instances(engine: ApiRuntime, http: httpx.Client) -> None:
    router = order(http, "router", {"name": "r1"})
    engine.processing.drain()
    up = diagnose(http, "router", router)
    assert up["state"] == "up" and kinds(up) == ["none"]
    assert up["summary"] == "router r1 is in `up`: nothing holds it back in `up`"


def test_cli_prints_the_chain_link_by_link(engine: ApiRuntime, http: httpx.Client) -> None:
    router = order(http, "router", {"name": "r2", "fail": True})
    port = order(http, "port", {"name": "eth0", "router": router})
    engine.processing.drain()
    body = diagnose(http, "port", port)
    result = CliRunner().invoke(
        app, ["instance", "diagnose", "port", port, "--url", str(http.base_url)], env={"COLUMNS": "400"}
    )
    raw = CliRunner().invoke(
        app, ["instance", "diagnose", "port", port, "--json", "--url", str(http.base_url)]
    )

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"port eth0 is in `{body['state']}`"
    assert lines[1] == f"└─ because {body['cause'][0]['message']} (skipped_dependency)"
    assert lines[2] == f"   └─ because {body['cause'][1]['message']} (failed_resource)"
    assert json.loads(raw.stdout)["cause"] == body["cause"]


def test_a_state_that_moves_on_by_itself_is_in_transition(engine: ApiRuntime, http: httpx.Client) -> None:
    """The rule itself, over the facts of a real instance in `start` (an auto transfer leaves it)
    with nothing pending: over HTTP its validation compile is always queued by then."""
    router = order(http, "router", {"name": "r1"})
    env_id = engine.context(None).env_id
    instance = engine.facades.inventory.get_instance(LOCAL, "router", router)
    allowed = engine.core.lifecycles.machine("simple").allowed("start")
    with engine.db.read() as session:
        situation = Situation(
            env_id=env_id,
            instance=instance,
            transfers=[(a["trigger"], a["target"]) for a in allowed],
            events=[],
            validation=None,
            pending=None,
        )
        chain = Diagnosis(session, situation).chain()
    assert [(c.kind, c.details) for c in chain] == [("in_transition", {"triggers": ["auto"]})]
    assert summary("router r1 is in `start`", chain) == (
        "router r1 is in `start` because `start` moves on by itself (auto transfer), nothing holds it back"
    )


def test_stale_lease_of_the_one_sqlite_compile_worker(engine: ApiRuntime, http: httpx.Client) -> None:
    """A killed SQLite compile worker leaves its lease: the queued validation names it."""
    _, info = process_identity("worker")
    pid = dead_pid()
    with engine.db.write() as session:
        leases.acquire(
            session,
            SQLITE_WORKER,
            f"worker@{info['host']}:{pid}:dead0000",
            now=utcnow(),
            ttl=3600,
            info={"host": info["host"], "pid": pid, "role": "worker"},
        )
    router = order(http, "router", {"name": "r1"})
    body = diagnose(http, "router", router)

    assert kinds(body) == ["pending_compile", "stale_lock"]
    assert body["cause"][1]["subject"] == {"type": "lock", "id": SQLITE_WORKER}
    assert "the lease of the compile worker is held by worker@" in body["cause"][1]["message"]
    assert "whose process is gone" in body["summary"]
