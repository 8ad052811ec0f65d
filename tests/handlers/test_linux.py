"""The linux network lab on real namespaces: create, no-op, in-place changes, a ping through a veth, removal.

Needs root and kernel namespace support; the ``netns_prefix`` fixture skips with the reason
where ``ip netns add`` is refused, and removes every namespace a test made, even on failure.
The name and address checks need neither and always run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lsm_handlers.linux import Interface, InterfaceHandler, Namespace, NamespaceHandler, Veth, VethHandler
from pydantic import ValidationError

from lsm.deploy.handler import Change, HandlerError
from tests.handlers import run
from tests.netlab import links, namespaces, netns_prefix, ping

__all__ = ["netns_prefix"]  # the fixture, imported for the tests below

AGENT = "lab"


def ns(name: str, *, purged: bool = False) -> Namespace:
    return Namespace(agent=AGENT, name=name, purged=purged)


def port(namespace: str, **kw: object) -> Interface:
    values: dict[str, object] = {"name": "p0", "kind": "veth", "peer": "p0-peer", "mtu": 1500}
    values.update(kw)
    return Interface(agent=AGENT, namespace=namespace, **values)


def veth(prefix: str, **kw: object) -> Veth:
    values: dict[str, object] = {
        "name": "t1",
        "namespace": f"{prefix}r1",
        "peer": "t1",
        "peer_namespace": f"{prefix}r2",
        "mtu": 1400,
        "address": "10.9.0.1/24",
        "peer_address": "10.9.0.2/24",
    }
    values.update(kw)
    return Veth(agent=AGENT, **values)


# -- checks where the resource is built (no root needed) --------------------------------------------
def test_a_link_name_longer_than_15_characters_is_refused_saying_so() -> None:
    with pytest.raises(ValidationError, match=r"1\.\.15 characters \(Linux IFNAMSIZ\)"):
        Interface(agent=AGENT, namespace="r1", name="a" * 16, kind="bridge")
    with pytest.raises(ValidationError, match="peer name"):
        Interface(agent=AGENT, namespace="r1", name="p0", kind="veth", peer="b" * 16)
    Interface(agent=AGENT, namespace="r1", name="a" * 15, kind="bridge")


@pytest.mark.parametrize("bad", ["-n", ".hidden", "a/b", "a b", "", "x" * 65])
def test_namespace_names_that_ip_or_the_kernel_would_misread_are_refused(bad: str) -> None:
    with pytest.raises(ValidationError, match="namespace name"):
        Namespace(agent=AGENT, name=bad)


def test_addresses_need_a_prefix_and_are_kept_as_ip_prints_them() -> None:
    with pytest.raises(ValidationError, match="needs a prefix length"):
        port("r1", address="10.0.0.1")
    with pytest.raises(ValidationError, match="not an IP address"):
        port("r1", address="10.0.0.300/24")
    assert port("r1", address="fd00:0::1/64").address == "fd00::1/64"


def test_a_veth_interface_needs_a_peer_and_only_a_veth_has_one() -> None:
    with pytest.raises(ValidationError, match="needs peer="):
        Interface(agent=AGENT, namespace="r1", name="p0", kind="veth")
    with pytest.raises(ValidationError, match="only a veth interface has a peer"):
        Interface(agent=AGENT, namespace="r1", name="p0", kind="bridge", peer="x")
    with pytest.raises(ValidationError, match="both ends are in namespace"):
        Veth(agent=AGENT, name="t", namespace="r1", peer="t", peer_namespace="r1")


# -- real namespaces --------------------------------------------------------------------------------
def test_a_namespace_is_created_left_alone_and_removed(netns_prefix: str, tmp_path: Path) -> None:
    name = f"{netns_prefix}r1"
    assert run(NamespaceHandler(), ns(name), tmp_path, dry_run=True).action == "create"
    assert name not in namespaces()
    assert run(NamespaceHandler(), ns(name), tmp_path).action == "create"
    assert name in namespaces()
    assert run(NamespaceHandler(), ns(name), tmp_path).action == "none"
    assert run(NamespaceHandler(), ns(name, purged=True), tmp_path).action == "delete"
    assert name not in namespaces()
    assert run(NamespaceHandler(), ns(name, purged=True), tmp_path).action == "none"


def test_an_interface_gets_its_mtu_and_address_and_changes_in_place(
    netns_prefix: str, tmp_path: Path
) -> None:
    r1 = f"{netns_prefix}r1"
    run(NamespaceHandler(), ns(r1), tmp_path)
    handler = InterfaceHandler()
    ctx = run(handler, port(r1, mtu=1400, address="192.0.2.1/24"), tmp_path)
    assert ctx.action == "create"
    assert {"p0", "p0-peer"} <= links(r1)
    current = handler.read(ctx, port(r1))
    assert current is not None
    assert (current["kind"], current["mtu"], current["address"], current["up"]) == (
        "veth",
        1400,
        "192.0.2.1/24",
        True,
    )

    assert run(handler, port(r1, mtu=1400, address="192.0.2.1/24"), tmp_path).action == "none"

    ctx = run(handler, port(r1, mtu=1280, address="192.0.2.1/24"), tmp_path)
    assert ctx.action == "update" and ctx.changes == {"mtu": Change(1400, 1280)}
    ctx = run(handler, port(r1, mtu=1280, address="198.51.100.7/25"), tmp_path)
    assert ctx.changes == {"address": Change("192.0.2.1/24", "198.51.100.7/25")}
    current = handler.read(ctx, port(r1))
    assert current is not None and current["addresses"] == ["198.51.100.7/25"] and current["mtu"] == 1280

    ctx = run(handler, port(r1, mtu=1280, address="198.51.100.7/25", up=False), tmp_path)
    assert ctx.changes == {"up": Change(True, False)}
    assert handler.read(ctx, port(r1))["up"] is False  # type: ignore[index]  # the interface exists: read gives its attributes
    run(handler, port(r1, mtu=1280, address="198.51.100.7/25"), tmp_path)

    dry = run(handler, port(r1, mtu=9000, address="198.51.100.7/25"), tmp_path, dry_run=True)
    assert dry.changes == {"mtu": Change(1280, 9000)}
    assert handler.read(dry, port(r1))["mtu"] == 1280  # type: ignore[index]  # the interface exists: read gives its attributes

    assert run(handler, port(r1, purged=True), tmp_path).action == "delete"
    assert "p0" not in links(r1) and "p0-peer" not in links(r1)
    assert run(handler, port(r1, purged=True), tmp_path).action == "none"


def test_a_change_of_kind_recreates_the_interface(netns_prefix: str, tmp_path: Path) -> None:
    r1 = f"{netns_prefix}r1"
    run(NamespaceHandler(), ns(r1), tmp_path)
    handler = InterfaceHandler()
    run(handler, port(r1, address="192.0.2.1/24"), tmp_path)
    ctx = run(handler, port(r1, kind="bridge", peer=None, address="192.0.2.1/24"), tmp_path)
    assert ctx.action == "update" and set(ctx.changes) == {"kind", "peer"}
    current = handler.read(ctx, port(r1))
    assert current is not None and current["kind"] == "bridge" and current["address"] == "192.0.2.1/24"
    assert "p0-peer" not in links(r1)


def test_an_interface_in_a_missing_namespace_fails_naming_it(netns_prefix: str, tmp_path: Path) -> None:
    missing = f"{netns_prefix}gone"
    with pytest.raises(
        HandlerError, match=rf"linux::Interface\[lab,name=p0\]: network namespace '{missing}'"
    ):
        run(InterfaceHandler(), port(missing), tmp_path)
    assert run(InterfaceHandler(), port(missing, purged=True), tmp_path).action == "none"


def test_a_veth_pair_between_two_namespaces_carries_a_ping_and_is_removed(
    netns_prefix: str, tmp_path: Path
) -> None:
    r1, r2 = f"{netns_prefix}r1", f"{netns_prefix}r2"
    for name in (r1, r2):
        run(NamespaceHandler(), ns(name), tmp_path)
    handler = VethHandler()
    assert run(handler, veth(netns_prefix), tmp_path, dry_run=True).action == "create"
    assert "t1" not in links(r1)

    ctx = run(handler, veth(netns_prefix), tmp_path)
    assert ctx.action == "create"
    assert "t1" in links(r1) and "t1" in links(r2)
    assert ping(r1, "10.9.0.2") and ping(r2, "10.9.0.1")
    assert run(handler, veth(netns_prefix), tmp_path).action == "none"

    ctx = run(handler, veth(netns_prefix, mtu=1300, peer_address="10.9.0.3/24"), tmp_path)
    assert ctx.changes == {"mtu": Change(1400, 1300), "peer_address": Change("10.9.0.2/24", "10.9.0.3/24")}
    assert ping(r1, "10.9.0.3")
    assert run(handler, veth(netns_prefix, mtu=1300, peer_address="10.9.0.3/24"), tmp_path).action == "none"

    assert run(handler, veth(netns_prefix, purged=True), tmp_path).action == "delete"
    assert "t1" not in links(r1) and "t1" not in links(r2)
    assert run(handler, veth(netns_prefix, purged=True), tmp_path).action == "none"


def test_a_veth_to_a_missing_namespace_fails_naming_it_and_creates_nothing(
    netns_prefix: str, tmp_path: Path
) -> None:
    r1 = f"{netns_prefix}r1"
    run(NamespaceHandler(), ns(r1), tmp_path)
    with pytest.raises(
        HandlerError, match=rf"linux::Veth\[lab,name=t1\]: network namespace '{netns_prefix}r2'"
    ):
        run(VethHandler(), veth(netns_prefix), tmp_path)
    assert "t1" not in links(r1)


def test_a_failing_ip_command_is_reported_with_the_command_and_the_kernels_answer(
    netns_prefix: str, tmp_path: Path
) -> None:
    r1 = f"{netns_prefix}r1"
    run(NamespaceHandler(), ns(r1), tmp_path)
    run(InterfaceHandler(), port(r1, name="dup", peer="dup-p"), tmp_path)
    # a veth whose peer end would take the name of an existing link: the kernel refuses
    with pytest.raises(HandlerError) as failed:
        run(InterfaceHandler(), port(r1, name="new", peer="dup"), tmp_path)
    message = str(failed.value)
    assert message.startswith("linux::Interface[lab,name=new]: `ip -n ")
    assert "link add new mtu 1500 type veth peer name dup mtu 1500` failed (exit 2)" in message
    assert "File exists" in message
    assert "new" not in links(r1)


def test_a_veth_whose_peer_end_vanished_is_recreated(netns_prefix: str, tmp_path: Path) -> None:
    r1, r2, r3 = f"{netns_prefix}r1", f"{netns_prefix}r2", f"{netns_prefix}r3"
    for name in (r1, r2, r3):
        run(NamespaceHandler(), ns(name), tmp_path)
    handler = VethHandler()
    run(handler, veth(netns_prefix), tmp_path)
    ctx = run(handler, veth(netns_prefix, peer_namespace=r3), tmp_path)
    assert ctx.action == "update" and "peer_namespace" in ctx.changes
    assert "t1" in links(r3) and "t1" not in links(r2)
    assert ping(r1, "10.9.0.2")

    # moving it to a namespace that does not exist fails before anything is deleted
    with pytest.raises(HandlerError, match=f"network namespace '{netns_prefix}r4' does not exist"):
        run(handler, veth(netns_prefix, peer_namespace=f"{netns_prefix}r4"), tmp_path)
    assert "t1" in links(r1) and "t1" in links(r3)
