"""Discovery end to end on the agents: order a discovery, the engine deploys it, results appear.

Everything runs through a real engine over the test database (SQLite and PostgreSQL): the
``examples/discovery`` model is compiled and its discovery resources are
deployed by the embedded agent (``engine.processing.drain()``), which stores what the bundled
handlers find with ``record_discovery`` in the transaction that writes the results. A second
run comes from a repair (``POST /api/v1/deploy {"repair": true}``'s facade) or from the
resource's ``poll`` metaparameter. ``tests/discovery/json_model.py`` gives a discovery handler
whose output a test controls, for the bad-output cases.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.schemas.deploy import DeployRequest, ResourceActionOut
from lsm.store.database import Database
from lsm.testing import served_url
from tests.discovery import file_id, plant_files
from tests.netlab import ip, netns_prefix

__all__ = ["netns_prefix"]  # the fixture, imported for the tests below

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discovery"
JSON_MODEL = Path(__file__).resolve().parent / "json_model.py"
AGENT = "host1"
LOCAL = RequestContext.local()
Engines = Callable[..., ApiRuntime]


@pytest.fixture
def engines(db: Database, tmp_path: Path) -> Iterator[Engines]:
    """Started engines over the test database: ``make(model=EXAMPLE)`` compiles and deploys when
    a test drains its loop; every engine is stopped at the end."""
    made: list[ApiRuntime] = []

    def make(model: Path = EXAMPLE) -> ApiRuntime:
        config = ServerConfig(
            database_url=db.url,
            model=str(model),
            lifecycle_dirs=[str(EXAMPLE)],
            embedded_worker=False,
            embedded_agent=True,
            state_dir=str(tmp_path / "state"),
            handler_roots=[str(tmp_path)],  # the planted files are beside the state directory
            settings={"partial_compiles": False},
        )
        engine = build_api(config, db=db)
        engine.start()
        made.append(engine)
        return engine

    yield make
    for engine in made:
        engine.stop()


def until(engine: ApiRuntime, condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Drain the engine's loop until ``condition`` holds (a bounded wait, not a sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        engine.processing.drain()
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.05)


def order(engine: ApiRuntime, entity: str, attributes: dict[str, Any]) -> str:
    instance = engine.facades.inventory.create_instance(LOCAL, entity, attributes)
    engine.processing.drain()
    return str(instance.id)


def state(engine: ApiRuntime, entity: str, ref: str) -> str:
    return engine.facades.inventory.get_instance(LOCAL, entity, ref).state


def discovered(engine: ApiRuntime, ctx: RequestContext = LOCAL) -> dict[str, bool]:
    """``{discovered id: managed}`` of the environment of ``ctx``."""
    return {row.id: row.managed for row in engine.facades.discovery.list_discovered(ctx, limit=10_000)}


def actions(engine: ApiRuntime, resource_id: str) -> list[ResourceActionOut]:
    """The resource's action log, oldest first."""
    return list(reversed(engine.facades.deploy.resource_actions(LOCAL, resource_id, limit=1000)))


def repair(engine: ApiRuntime) -> None:
    engine.facades.deploy.deploy(LOCAL, DeployRequest(repair=True))
    engine.processing.drain()


def file_discovery_id(name: str = "srv") -> str:
    return f"std::FileDiscovery[{AGENT},name={name}]"


# -- files ---------------------------------------------------------------------------------------------
def test_a_deployed_file_discovery_finds_exactly_the_planted_files_and_forgets_a_removed_one(
    engines: Engines, tmp_path: Path
) -> None:
    engine = engines()
    srv = tmp_path / "srv"
    planted = plant_files(srv, {"a.conf": "a = 1\n", "b.conf": "b = 2\n", "c.conf": "c\n"}, agent=AGENT)
    plant_files(srv, {"notes.txt": "not matched"}, agent=AGENT)
    mine = {"host": AGENT, "path": str(srv / "m.conf"), "content": "mine\n", "mode": 0o600}
    managed = order(engine, "managed_file", mine)
    assert state(engine, "managed_file", managed) == "up"
    assert (srv / "m.conf").read_text() == "mine\n"  # written by the bundled std::File handler

    wanted = {"name": "srv", "host": AGENT, "directory": str(srv), "pattern": r".*\.conf"}
    finder = order(engine, "file_discovery", wanted)
    assert state(engine, "file_discovery", finder) == "up"
    expected = {rid: False for rid in planted} | {file_id(AGENT, srv / "m.conf"): True}
    assert discovered(engine) == expected
    (run,) = actions(engine, file_discovery_id())
    assert (run.action, run.status) == ("discover", "deployed")
    row = engine.facades.discovery.get_discovered(LOCAL, file_id(AGENT, srv / "a.conf"))
    assert row.attributes == {"path": str(srv / "a.conf"), "content": "a = 1\n", "mode": 0o640}
    assert row.discovered_by == file_discovery_id()

    # a file removed: gone after the next run (a repair re-runs every deployed resource)
    (srv / "b.conf").unlink()
    repair(engine)
    del expected[file_id(AGENT, srv / "b.conf")]
    assert discovered(engine) == expected
    assert [a.action for a in actions(engine, file_discovery_id())] == ["discover", "discover"]


def test_a_polled_file_discovery_runs_again_by_itself(engines: Engines, tmp_path: Path) -> None:
    """``poll`` is how periodic discovery is configured: no repair, no new version, a new run."""
    engine = engines()
    srv = tmp_path / "srv"
    planted = plant_files(srv, {"a.conf": "a", "b.conf": "b"}, agent=AGENT)
    order(engine, "file_discovery", {"name": "srv", "host": AGENT, "directory": str(srv), "poll": 0.2})
    assert set(discovered(engine)) == set(planted)
    (srv / "a.conf").unlink()
    later = plant_files(srv, {"new.conf": "n"}, agent=AGENT)
    want = {file_id(AGENT, srv / "b.conf"), *later}
    until(engine, lambda: set(discovered(engine)) == want, "the polled discovery saw the change")
    assert len(actions(engine, file_discovery_id())) >= 2


# -- interfaces in a network namespace ------------------------------------------------------------------
def test_a_deployed_interface_discovery_finds_the_links_of_a_namespace(
    engines: Engines, netns_prefix: str
) -> None:
    namespace = f"{netns_prefix}d"
    ip("netns", "add", namespace)
    for name, peer, address in (("eth0", "peer0", "10.77.0.1/24"), ("eth1", "peer1", None)):
        ip("-n", namespace, "link", "add", name, "type", "veth", "peer", "name", peer)
        if address:
            ip("-n", namespace, "addr", "add", address, "dev", name)
    engine = engines()
    finder = order(
        engine,
        "interface_discovery",
        {"name": "ports", "host": "r1", "namespace": namespace, "name_filter": r"eth\d+"},
    )
    assert state(engine, "interface_discovery", finder) == "up"
    eth0, eth1 = "linux::Interface[r1,name=eth0]", "linux::Interface[r1,name=eth1]"
    assert discovered(engine) == {eth0: False, eth1: False}
    attributes = engine.facades.discovery.get_discovered(LOCAL, eth0).attributes
    assert (attributes["host"], attributes["interface_name"], attributes["ip_address"]) == (
        "r1",
        "eth0",
        "10.77.0.1/24",
    )

    ip("-n", namespace, "link", "del", "eth1")
    repair(engine)
    assert discovered(engine) == {eth0: False}


# -- adoption -------------------------------------------------------------------------------------------
def test_adopted_files_go_up_without_a_write_to_them(engines: Engines, tmp_path: Path) -> None:
    engine = engines()
    srv = tmp_path / "srv"
    files = {"motd": "hello\n", "issue": "Welcome\n", "hosts": "127.0.0.1 x\n"}
    planted = plant_files(srv, files, agent=AGENT)
    order(engine, "file_discovery", {"name": "srv", "host": AGENT, "directory": str(srv)})
    assert set(discovered(engine)) == set(planted)
    paths = [srv / "motd", srv / "issue"]
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_mode) for p in paths}
    ids = [file_id(AGENT, p) for p in paths]

    adopted = engine.facades.discovery.adopt(LOCAL, "managed_file", ids)
    engine.processing.drain()

    assert [state(engine, "managed_file", str(i.id)) for i in adopted] == ["up", "up"]
    for rid in ids:
        log = actions(engine, rid)
        assert log, rid
        assert not {a.action for a in log} & {"create", "update", "delete"}, [a.action for a in log]
        assert all(a.status == "deployed" for a in log)
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_mode) for p in paths} == before
    # the next discovery run sees them managed
    repair(engine)
    assert discovered(engine) == {rid: rid in ids for rid in planted}


# -- restart and environments ---------------------------------------------------------------------------
def test_results_survive_a_restart_and_stay_in_their_environment(engines: Engines, tmp_path: Path) -> None:
    engine = engines()
    srv = tmp_path / "srv"
    planted = plant_files(srv, {"a.conf": "a", "b.conf": "b"}, agent=AGENT)
    order(engine, "file_discovery", {"name": "srv", "host": AGENT, "directory": str(srv)})
    assert set(discovered(engine)) == set(planted)
    engine.stop()

    restarted = engines()
    with served_url(restarted) as base, httpx.Client(base_url=base, timeout=60) as http:
        listed = http.get("/api/v1/discovered")
        assert listed.status_code == 200, listed.text
        assert sorted(r["id"] for r in listed.json()) == sorted(planted)
        assert http.post("/api/v1/environments", json={"name": "other"}).status_code in (200, 201)
        other = {"X-LSM-Environment": "other"}
        assert http.get("/api/v1/discovered", headers=other).json() == []
        one = next(iter(planted))
        assert http.get(f"/api/v1/discovered/{one}", headers=other).status_code == 404
    assert discovered(restarted, LOCAL.in_environment("other")) == {}


# -- bad output -----------------------------------------------------------------------------------------
def feed_id(name: str) -> str:
    return f"test::JsonDiscovery[{AGENT},name={name}]"


def write_feed(path: Path, found: dict[str, Any]) -> None:
    path.write_text(json.dumps(found))


def test_an_invalid_id_fails_the_run_and_keeps_the_previous_results(engines: Engines, tmp_path: Path) -> None:
    engine = engines(JSON_MODEL)
    bad_source, good_source = tmp_path / "bad.json", tmp_path / "good.json"
    first = {"test::Thing[h1,name=a]": {"n": 1}, "test::Thing[h1,name=b]": {"n": 2}}
    write_feed(bad_source, first)
    write_feed(good_source, {"test::Other[h1,name=x]": {}})
    bad = order(engine, "feed", {"name": "bad", "host": AGENT, "source": str(bad_source)})
    order(engine, "feed", {"name": "good", "host": AGENT, "source": str(good_source)})
    assert state(engine, "feed", bad) == "up"
    assert set(discovered(engine)) == {*first, "test::Other[h1,name=x]"}

    # the bad feed now reports an id that is not a resource id; the good one a new resource
    write_feed(bad_source, {"test::Thing[h1,name=c]": {}, "not an id": {"n": 3}})
    write_feed(good_source, {"test::Other[h1,name=y]": {}})
    repair(engine)

    *_, failed = actions(engine, feed_id("bad"))
    assert (failed.action, failed.status) == ("error", "failed")  # no retry metaparameter: final
    assert any("not an id" in line.message for line in failed.messages), [m.message for m in failed.messages]
    resource = engine.facades.deploy.get_resource(LOCAL, feed_id("bad"))
    assert resource.status == "failed" and "InvalidDiscoveryOutput" in (resource.last_error or "")
    # its previous results are intact; the other feed of the same batch ran and stored its own
    assert set(discovered(engine)) == {*first, "test::Other[h1,name=y]"}
    assert (engine.facades.discovery.get_discovered(LOCAL, "test::Thing[h1,name=a]").attributes) == {"n": 1}
    assert [a.action for a in actions(engine, feed_id("good"))][-1] == "discover"


def test_a_store_failure_fails_only_its_own_resource(
    engines: Engines, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output that passed the executor's check but could not be stored (here: a fault injected
    into the write) rolls back to its savepoint: that resource fails, the batch's others commit."""
    import lsm.deploy.batches as batches_module

    engine = engines(JSON_MODEL)
    sources = {name: tmp_path / f"{name}.json" for name in ("one", "two")}
    for name, source in sources.items():
        write_feed(source, {f"test::Thing[h1,name={name}-1]": {}})
        order(engine, "feed", {"name": name, "host": AGENT, "source": str(source)})
    assert set(discovered(engine)) == {"test::Thing[h1,name=one-1]", "test::Thing[h1,name=two-1]"}

    real = batches_module.record_discovery  # type: ignore[attr-defined]  # the name the agent calls, patched

    def faulty(session: Any, env_id: str, discovery_id: str, *args: Any, **kwargs: Any) -> Any:
        record = real(session, env_id, discovery_id, *args, **kwargs)  # written, then refused
        if discovery_id == feed_id("one"):
            raise RuntimeError("injected store fault")
        return record

    monkeypatch.setattr(batches_module, "record_discovery", faulty)
    for name, source in sources.items():
        write_feed(source, {f"test::Thing[h1,name={name}-2]": {}})
    repair(engine)

    assert set(discovered(engine)) == {"test::Thing[h1,name=one-1]", "test::Thing[h1,name=two-2]"}
    *_, failed = actions(engine, feed_id("one"))
    assert (failed.action, failed.status) == ("error", "failed")
    assert failed.messages[-1].message == "RuntimeError: injected store fault"
    assert any(m.message == "read the feed" for m in failed.messages)  # the handler's own lines kept
    assert engine.facades.deploy.get_resource(LOCAL, feed_id("two")).status == "deployed"
