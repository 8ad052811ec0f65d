"""The bundled discovery handlers against real things: planted files, a local HTTP server, a namespace.

Each test runs a handler as the agent does (``deploy`` with a ``HandlerContext``) and, where the
brief of the run matters, stores the result with ``record_discovery`` to show that a second run
replaces the first. Namespaces are named ``lsmt-<hex>-...`` and always removed; the test is
skipped, saying why, where ``ip netns add`` is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.discovery import (
    FileDiscovery,
    HttpCollectionDiscovery,
    HttpCollectionDiscoveryHandler,
    InterfaceDiscovery,
    InterfaceDiscoveryHandler,
)
from pydantic import ValidationError

from lsm.deploy.handler import HandlerContext, HandlerError
from lsm.deploy.registry import HandlerRegistry
from lsm.discovery import record_discovery
from lsm.store.database import Database
from lsm.store.discovery import statements as discovery_store
from tests.desired_state import new_env
from tests.discovery import file_id, plant_files, run_file_discovery
from tests.handlers import jail_for
from tests.netlab import ip, netns_prefix

__all__ = ["netns_prefix"]  # the fixture, imported for the tests below


def run(handler: Any, resource: Any, tmp_path: Path) -> HandlerContext:
    ctx = HandlerContext(resource.id, state_dir=tmp_path, jail=jail_for(resource, tmp_path))
    handler.deploy(ctx, resource)
    assert ctx.action == "discover"
    return ctx


def test_the_registry_finds_the_bundled_discovery_handlers() -> None:
    registry = HandlerRegistry()
    for resource_type in ("std::FileDiscovery", "std::HttpCollectionDiscovery", "linux::InterfaceDiscovery"):
        assert registry.handler_class(resource_type).resource_type == resource_type


# -- files ----------------------------------------------------------------------------------------
def test_file_discovery_finds_exactly_the_matching_planted_files(tmp_path: Path) -> None:
    srv = tmp_path / "srv"
    planted = plant_files(srv, {"a.conf": "a = 1\n", "b.conf": "b = 2\n"}, agent="h1", mode=0o600)
    plant_files(srv, {"notes.txt": "not me"}, agent="h1")
    (srv / "sub").mkdir()
    (srv / "sub" / "c.conf").write_text("deeper")
    (srv / "binary.conf").write_bytes(b"\xff\xfe\x00")
    os.symlink(srv / "a.conf", srv / "link.conf")

    _, found = run_file_discovery(srv, agent="h1", pattern=r".*\.conf")
    assert sorted(found) == sorted(planted)
    value = found[file_id("h1", srv / "a.conf")]
    assert value.model_dump() == {"path": str(srv / "a.conf"), "content": "a = 1\n", "mode": 0o600}  # type: ignore[attr-defined]  # found values are DiscoveredResource models


def test_file_discovery_recursive_and_the_warnings_it_logs(tmp_path: Path) -> None:
    srv = tmp_path / "srv"
    plant_files(srv / "sub", {"c.conf": "deeper"}, agent="h1")
    (srv / "binary.conf").write_bytes(b"\xff\xfe\x00")
    resource = FileDiscovery(agent="h1", name="all", directory=str(srv), pattern=r".*\.conf", recursive=True)
    from lsm_handlers.discovery import FileDiscoveryHandler

    ctx = run(FileDiscoveryHandler(), resource, tmp_path)
    assert sorted(ctx.discovered or {}) == [file_id("h1", srv / "sub" / "c.conf")]
    assert any("not UTF-8" in line.message for line in ctx.logs)


def test_file_discovery_of_a_missing_directory_fails_the_run(tmp_path: Path) -> None:
    with pytest.raises(HandlerError, match="not a directory"):
        run_file_discovery(tmp_path / "missing", agent="h1")


def test_file_discovery_refuses_a_relative_directory_or_a_bad_pattern() -> None:
    with pytest.raises(ValidationError, match="relative"):
        FileDiscovery(agent="h1", name="x", directory="etc")
    with pytest.raises(ValidationError, match="regular expression"):
        FileDiscovery(agent="h1", name="x", directory="/etc", pattern="(")


def test_a_removed_file_is_gone_after_the_next_run(db: Database, tmp_path: Path) -> None:
    env = new_env(db)
    srv = tmp_path / "srv"
    planted = plant_files(srv, {"one": "1", "two": "2", "three": "3"}, agent="h1")
    for _ in range(2):  # the second run, after `two` was removed, no longer has it
        discovery_id, found = run_file_discovery(srv, agent="h1")
        with db.write() as session:
            record_discovery(session, env, discovery_id, "h1", found, now=datetime.now(UTC))
        with db.read() as session:
            stored = {r.resource_id for r in discovery_store.list_discovered(session, env)}
        assert stored == set(planted)
        (srv / "two").unlink(missing_ok=True)
        planted.pop(file_id("h1", srv / "two"), None)


# -- HTTP collections -------------------------------------------------------------------------------
class Collection:
    """A JSON collection served on 127.0.0.1; ``body`` may be changed between requests."""

    def __init__(self) -> None:
        self.body: Any = []
        self.status = 200
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                data = json.dumps(outer.body).encode()
                self.send_response(outer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/items"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def collection() -> Iterator[Collection]:
    served = Collection()
    try:
        yield served
    finally:
        served.close()


def test_http_discovery_reports_the_objects_of_a_list(collection: Collection, tmp_path: Path) -> None:
    collection.body = [{"id": "a1", "size": 1}, {"id": 7, "size": 2}]
    resource = HttpCollectionDiscovery(agent="api", name="items", url=collection.url)
    found = run(HttpCollectionDiscoveryHandler(), resource, tmp_path).discovered
    assert found == {
        "std::HttpObject[api,id=a1]": {"id": "a1", "size": 1},
        "std::HttpObject[api,id=7]": {"id": 7, "size": 2},
    }


def test_http_discovery_reports_the_objects_of_a_dict_under_its_own_type(
    collection: Collection, tmp_path: Path
) -> None:
    collection.body = {"x": {"v": 1}, "y": {"v": 2}}
    resource = HttpCollectionDiscovery(
        agent="api", name="items", url=collection.url, found_type="acme::Item", found_attribute="key"
    )
    found = run(HttpCollectionDiscoveryHandler(), resource, tmp_path).discovered
    assert found == {"acme::Item[api,key=x]": {"v": 1}, "acme::Item[api,key=y]": {"v": 2}}


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ([{"name": "no id"}], 200, "has no 'id' field"),
        ("just a string", 200, "not a collection"),
        ([], 500, "answered 500"),
    ],
)
def test_http_discovery_fails_the_run_on_a_bad_answer(
    collection: Collection, tmp_path: Path, body: Any, status: int, error: str
) -> None:
    collection.body, collection.status = body, status
    resource = HttpCollectionDiscovery(agent="api", name="items", url=collection.url)
    with pytest.raises(HandlerError, match=error):
        run(HttpCollectionDiscoveryHandler(), resource, tmp_path)


def test_http_discovery_of_an_unreachable_url_fails_the_run(collection: Collection, tmp_path: Path) -> None:
    url = collection.url
    collection.close()
    resource = HttpCollectionDiscovery(agent="api", name="items", url=url)
    with pytest.raises(HandlerError, match="failed"):
        run(HttpCollectionDiscoveryHandler(), resource, tmp_path)


# -- Linux interfaces -------------------------------------------------------------------------------
@pytest.fixture
def namespace(netns_prefix: str) -> str:
    """A fresh network namespace named with ``tests.netlab``'s prefix (removed by its fixture)."""
    name = f"{netns_prefix}ns"
    ip("netns", "add", name)
    return name


def add_veth(namespace: str, name: str, peer: str, address: str | None) -> None:
    ip("-n", namespace, "link", "add", name, "type", "veth", "peer", "name", peer)
    if address:
        ip("-n", namespace, "addr", "add", address, "dev", name)
    ip("-n", namespace, "link", "set", name, "up")


def test_interface_discovery_in_a_namespace_with_a_name_filter(
    namespace: str, db: Database, tmp_path: Path
) -> None:
    add_veth(namespace, "eth0", "peer0", "10.77.0.1/24")
    add_veth(namespace, "eth1", "peer1", None)
    resource = InterfaceDiscovery(agent="r1", name="ports", namespace=namespace, name_filter=r"eth\d+")
    found = run(InterfaceDiscoveryHandler(), resource, tmp_path).discovered or {}
    assert sorted(found) == ["linux::Interface[r1,name=eth0]", "linux::Interface[r1,name=eth1]"]
    eth0 = found["linux::Interface[r1,name=eth0]"].model_dump()
    assert (eth0["host"], eth0["interface_name"], eth0["ip_address"]) == ("r1", "eth0", "10.77.0.1/24")
    assert eth0["namespace"] == namespace and eth0["up"] is True
    assert found["linux::Interface[r1,name=eth1]"].ip_address is None
    # without a filter: every link, the loopback and the peers too
    everything = run(
        InterfaceDiscoveryHandler(), InterfaceDiscovery(agent="r1", name="all", namespace=namespace), tmp_path
    )
    assert {"linux::Interface[r1,name=lo]", "linux::Interface[r1,name=peer0]"} <= set(
        everything.discovered or {}
    )

    # stored, then a link removed: gone after the next run
    env = new_env(db)
    for expected in (["eth0", "eth1"], ["eth0"]):
        found = run(InterfaceDiscoveryHandler(), resource, tmp_path).discovered or {}
        with db.write() as session:
            record_discovery(session, env, resource.id, "r1", found, now=datetime.now(UTC))
        with db.read() as session:
            stored = [r.resource_id for r in discovery_store.list_discovered(session, env)]
        assert stored == [f"linux::Interface[r1,name={n}]" for n in expected]
        ip("-n", namespace, "link", "del", "eth1", check=False)


def test_interface_discovery_of_a_missing_namespace_fails_the_run(tmp_path: Path) -> None:
    if shutil.which("ip") is None:
        pytest.skip("the `ip` command (iproute2) is not installed")
    resource = InterfaceDiscovery(agent="r1", name="ports", namespace=f"lsmt-missing-{uuid.uuid4().hex[:6]}")
    with pytest.raises(HandlerError, match="failed"):
        run(InterfaceDiscoveryHandler(), resource, tmp_path)
