"""examples/discovery: adoption end to end up to the desired state, and the shared-base-class handlers.

The adoption test runs the example on a real engine with its compile worker: discovered files
are adopted, the exporting compile puts a ``std::File`` resource for each in the desired state
whose attributes are exactly what is on disk (so the file handler's read will see no change),
and the discovered rows turn ``managed``. What is left for the deploy engine is the deploy itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from lsm.deploy.handler import HandlerContext, HandlerError
from lsm.discovery import record_discovery
from lsm.errors import ConfigurationError
from lsm.model import load_model, refine
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.store.database import Database
from lsm.testing import served_url
from tests.discovery import plant_files, run_file_discovery
from tests.model import inst

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discovery"


def test_the_example_declares_its_adopter_handlers_and_refines_a_file() -> None:
    model = load_model(EXAMPLE)
    assert sorted(model.adopters) == [("std::File", "managed_file")]
    assert sorted(model.handlers) == ["example::Interface", "example::InterfaceDiscovery"]
    attributes = {"host": "h1", "path": "/srv/motd", "content": "hi\n", "mode": 0o600}
    result = refine(model, {"managed_file": [inst(1, attributes)]})
    (resource,) = [r for rs in result.sets.values() for r in rs]
    assert resource.id == "std::File[h1,path=/srv/motd]"
    assert resource.attributes() == {
        "agent": "h1",
        "purged": False,
        "path": "/srv/motd",
        "content": "hi\n",
        "mode": 0o600,
    }


# -- the Credentials / InterfaceBase pattern ----------------------------------------------------------
@pytest.fixture
def device(tmp_path: Path) -> Path:
    root = tmp_path / "device"
    root.mkdir()
    (root / "credentials.json").write_text(json.dumps({"username": "admin", "password": "s3cret"}))
    (root / "interfaces.json").write_text(json.dumps({"eth0": {"ip_address": "10.0.0.1/24"}, "mgmt0": {}}))
    return root


def test_a_discovery_and_a_crud_handler_share_the_login_of_their_base_class(
    device: Path, tmp_path: Path
) -> None:
    from examples.discovery.handlers import (
        Interface,
        InterfaceBase,
        InterfaceDiscovery,
        InterfaceDiscoveryHandler,
        InterfaceHandler,
    )

    assert issubclass(InterfaceDiscoveryHandler, InterfaceBase) and issubclass(
        InterfaceHandler, InterfaceBase
    )
    creds = {"device": str(device), "username": "admin", "password": "s3cret"}
    discovery = InterfaceDiscovery(agent="r1", name="ports", name_filter=r"eth\d+", **creds)
    ctx = HandlerContext(discovery.id, state_dir=tmp_path)
    InterfaceDiscoveryHandler().deploy(ctx, discovery)
    assert {k: v.model_dump() for k, v in (ctx.discovered or {}).items()} == {
        "example::Interface[r1,name=eth0]": {
            "host": "r1",
            "interface_name": "eth0",
            "ip_address": "10.0.0.1/24",
        }
    }
    # the CRUD handler: eth0 as discovered is in its desired state; eth1 is created
    for name, address, action in (("eth0", "10.0.0.1/24", "none"), ("eth1", "10.0.1.1/24", "create")):
        interface = Interface(agent="r1", name=name, ip_address=address, **creds)
        ctx = HandlerContext(interface.id, state_dir=tmp_path)
        InterfaceHandler().deploy(ctx, interface)
        assert ctx.action == action
    assert json.loads((device / "interfaces.json").read_text())["eth1"] == {"ip_address": "10.0.1.1/24"}
    # a wrong password fails both the same way: it is one login
    bad = {**creds, "password": "nope"}
    with pytest.raises(HandlerError, match="login"):
        InterfaceDiscoveryHandler().deploy(
            HandlerContext("x", state_dir=tmp_path), InterfaceDiscovery(agent="r1", name="p", **bad)
        )
    with pytest.raises(HandlerError, match="login"):
        InterfaceHandler().deploy(
            HandlerContext("x", state_dir=tmp_path), Interface(agent="r1", name="eth0", **bad)
        )


# -- adoption up to the desired state -------------------------------------------------------------------
@pytest.fixture
def http(db: Database, tmp_path: Path) -> Iterator[httpx.Client]:
    config = ServerConfig(
        database_url=db.url,
        model=str(EXAMPLE),
        lifecycle_dirs=[str(EXAMPLE)],
        embedded_worker=True,
        handler_roots=[str(tmp_path)],  # the operator lets the agent's handlers use the test's files
    )
    engine = build_api(config, db=db)
    engine.start()
    try:
        with served_url(engine) as base, httpx.Client(base_url=base, timeout=60) as client:
            yield client
    finally:
        engine.stop()


def test_adopted_files_are_exported_exactly_as_they_are_on_disk(
    db: Database, http: httpx.Client, tmp_path: Path
) -> None:
    env = http.get("/api/v1/environments/default").json()["id"]
    srv = tmp_path / "srv"
    planted = plant_files(
        srv, {"motd": "hello\n", "issue": "Welcome\n", "other": "x"}, agent="host1", mode=0o600
    )
    discovery_id, found = run_file_discovery(srv, agent="host1")
    with db.write() as session:
        record_discovery(session, env, discovery_id, "host1", found, now=datetime.now(UTC))
    adopted = sorted(planted)[:2]
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in srv.iterdir()}
    answer = http.post("/lsm/v1/service_inventory/managed_file/adopt", json={"discovered_ids": adopted})
    assert answer.status_code == 200, answer.text

    deadline = time.monotonic() + 60
    managed: list[str] = []
    while time.monotonic() < deadline:  # the exporting compile runs on the embedded worker
        managed = [r["id"] for r in http.get("/api/v1/discovered", params={"managed": "true"}).json()]
        if len(managed) == 2:
            break
        time.sleep(0.1)
    assert managed == adopted
    version = http.get("/api/v1/desired_state").json()[0]["version"]
    resources = {r["id"]: r for r in http.get(f"/api/v1/desired_state/{version}/resources").json()}
    for rid in adopted:
        on_disk = found[rid].model_dump()  # type: ignore[attr-defined]  # found values are DiscoveredResource models
        assert resources[rid]["attributes"] == {"agent": "host1", "purged": False, **on_disk}
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in srv.iterdir()} == before


def test_without_its_lifecycle_folder_the_example_is_refused_naming_the_setting(db: Database) -> None:
    """The example brings its own lifecycle (``adoptable.yaml``): without ``lifecycle_dirs`` the
    engine refuses it, and the message says which setting finds it."""
    engine = build_api(ServerConfig(database_url=db.url, model=str(EXAMPLE), embedded_worker=False), db=db)
    try:
        with pytest.raises(ConfigurationError) as refused:
            engine.start()
        message = str(refused.value)
        assert "unknown lifecycle 'adoptable'" in message
        assert "lifecycle_dirs" in message and "adoptable.yaml" in message
    finally:
        engine.stop()
