"""The bundled handlers' watches, called as the engine calls them: a change on the target calls
``drifted``; stopping the watch stops the calls. Files through the agent's one inotify instance;
the Linux lab through netlink in real namespaces (skipped, with the reason, where namespaces are
refused). The HTTP document handler does not watch (it is polled).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.files import File, FileHandler
from lsm_handlers.http import HttpDocumentHandler
from lsm_handlers.linux import Interface, InterfaceHandler, Namespace, NamespaceHandler, Veth, VethHandler

from lsm.deploy.file_watch import FileWatcher
from lsm.deploy.handler import Handler, HandlerError, WatchContext, call, watches
from lsm.deploy.jail import Jail
from lsm.deploy.materialize import materialize
from lsm.model.resource import Resource
from tests.handlers import run
from tests.netlab import ip, netns_prefix
from tests.waiting import wait_until

__all__ = ["netns_prefix"]  # the fixture, imported for the tests below


class Seen:
    """What a watch reported: ``drifted`` calls and ``failed`` exceptions."""

    def __init__(self) -> None:
        self.drifts = 0
        self.failures: list[BaseException] = []
        self.lock = threading.Lock()

    def drifted(self) -> None:
        with self.lock:
            self.drifts += 1

    def failed(self, exc: BaseException) -> None:
        with self.lock:
            self.failures.append(exc)


@pytest.fixture
def files() -> Iterator[FileWatcher]:
    watcher = FileWatcher()
    yield watcher
    watcher.close()


def start(
    handler: Handler[Any], resource: Resource, state_dir: Path, files: FileWatcher
) -> tuple[Seen, Callable[[], None]]:
    data = resource.to_data()
    seen = Seen()
    ctx = WatchContext(
        data.id,
        state_dir=state_dir,
        jail=Jail.of([state_dir]),
        files=files,
        drifted=seen.drifted,
        failed=seen.failed,
    )
    stop = call(handler.watch, ctx, materialize(handler, data.id, data.attributes, data.requires))
    assert stop is not None
    return seen, stop


def test_a_file_watch_sees_edits_removal_and_mode_changes_of_its_file_only(
    tmp_path: Path, files: FileWatcher
) -> None:
    resource = File(agent="a", path=str(tmp_path / "motd"), content="hello")
    run(FileHandler(), resource, tmp_path)
    seen, stop = start(FileHandler(), resource, tmp_path, files)

    (tmp_path / "other").write_text("not watched")
    (tmp_path / "motd").write_text("edited")
    wait_until(lambda: seen.drifts >= 1, "an edit is seen")
    before = seen.drifts
    os.chmod(tmp_path / "motd", 0o600)
    wait_until(lambda: seen.drifts > before, "a mode change is seen")
    before = seen.drifts
    os.remove(tmp_path / "motd")
    wait_until(lambda: seen.drifts > before, "a removal is seen")

    stop()
    assert files.watched() == 0
    before = seen.drifts
    (tmp_path / "motd").write_text("after the stop")
    sibling = File(agent="a", path=str(tmp_path / "canary"), content="x")
    canary, stop_canary = start(FileHandler(), sibling, tmp_path, files)
    (tmp_path / "canary").write_text("y")  # events after the stop reach the canary, not the motd
    wait_until(lambda: canary.drifts >= 1, "the canary sees its edit")
    assert seen.drifts == before
    stop_canary()


def test_ten_thousand_file_watches_in_a_few_directories_are_one_kernel_watch_each(
    tmp_path: Path, files: FileWatcher
) -> None:
    stops = []
    for n in range(10_000):
        folder = tmp_path / f"d{n % 10}"
        folder.mkdir(exist_ok=True)
        stops.append(files.watch(folder / f"f{n}", lambda: None, lambda exc: None))
    assert files.watched() == 10_000
    assert len(files._folders) == 10  # one kernel watch per directory
    for stop in stops:
        stop()
    assert (files.watched(), len(files._folders)) == (0, 0)


def test_a_file_watch_whose_directory_goes_reports_drift_and_failure(
    tmp_path: Path, files: FileWatcher
) -> None:
    folder = tmp_path / "etc"
    folder.mkdir()
    resource = File(agent="a", path=str(folder / "conf"), content="x")
    run(FileHandler(), resource, tmp_path)
    seen, _stop = start(FileHandler(), resource, tmp_path, files)
    (folder / "conf").unlink()
    folder.rmdir()
    wait_until(lambda: seen.failures, "the watch reports that its directory went")
    assert seen.drifts >= 1


def test_a_file_watch_outside_the_jail_or_of_a_missing_directory_raises(
    tmp_path: Path, files: FileWatcher
) -> None:
    with pytest.raises(HandlerError, match="outside the directories"):
        start(FileHandler(), File(agent="a", path="/etc/hostname", content="x"), tmp_path, files)
    with pytest.raises(OSError):
        start(FileHandler(), File(agent="a", path=str(tmp_path / "no" / "f"), content="x"), tmp_path, files)


def test_the_http_document_handler_does_not_watch() -> None:
    assert not watches(HttpDocumentHandler())
    assert watches(FileHandler()) and watches(InterfaceHandler()) and watches(VethHandler())


def test_an_interface_watch_hears_netlink_events_of_its_link_in_its_namespace(
    netns_prefix: str, tmp_path: Path, files: FileWatcher
) -> None:
    namespace = f"{netns_prefix}r1"
    run(NamespaceHandler(), Namespace(agent="lab", name=namespace), tmp_path)
    interface = Interface(agent="lab", namespace=namespace, name="p0", kind="veth", peer="p0-peer", mtu=1500)
    run(InterfaceHandler(), interface, tmp_path)
    seen, stop = start(InterfaceHandler(), interface, tmp_path, files)
    ns_seen, ns_stop = start(NamespaceHandler(), Namespace(agent="lab", name=namespace), tmp_path, files)

    ip("-n", namespace, "link", "add", "other", "type", "veth", "peer", "name", "other-peer")
    ip("-n", namespace, "link", "set", "dev", "p0", "mtu", "1400")
    wait_until(lambda: seen.drifts >= 1, "the MTU change of p0 is heard")
    before = seen.drifts
    ip("-n", namespace, "address", "add", "10.7.0.1/24", "dev", "p0")
    wait_until(lambda: seen.drifts > before, "an address added to p0 is heard")
    stop()

    ip("netns", "del", namespace)
    wait_until(lambda: ns_seen.drifts >= 1, "the namespace's removal is heard")
    ns_stop()


def test_a_veth_watch_hears_both_ends_and_a_missing_namespace_fails_without_making_it(
    netns_prefix: str, tmp_path: Path, files: FileWatcher
) -> None:
    pair = Veth(
        agent="lab",
        name="t1",
        namespace=f"{netns_prefix}r1",
        peer="t1",
        peer_namespace=f"{netns_prefix}r2",
        mtu=1400,
        address="10.9.0.1/24",
        peer_address="10.9.0.2/24",
    )
    for name in ("r1", "r2"):
        run(NamespaceHandler(), Namespace(agent="lab", name=f"{netns_prefix}{name}"), tmp_path)
    run(VethHandler(), pair, tmp_path)
    seen, stop = start(VethHandler(), pair, tmp_path, files)
    ip("-n", f"{netns_prefix}r2", "link", "set", "dev", "t1", "down")
    wait_until(lambda: seen.drifts >= 1, "the far end going down is heard")
    stop()

    missing = Interface(agent="lab", namespace=f"{netns_prefix}gone", name="p0", kind="dummy")
    with pytest.raises(OSError, match="does not exist"):
        start(InterfaceHandler(), missing, tmp_path, files)
    assert not (Path("/run/netns") / f"{netns_prefix}gone").exists()
