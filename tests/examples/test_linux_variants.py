"""examples/router_port_linux and examples/tunnel_linux: they compile to the bundled linux:: types.

The compile tests need nothing. ``test_a_compiled_tunnel_deployed_pings_and_its_purge_removes_it``
deploys a compile's resources on real namespaces by calling the handlers as the engine will
(root; skipped with the reason elsewhere); the same checks through orders to a real engine
(order a tunnel -> ping answers; delete -> link gone) are in ``test_linux_lab_e2e.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.linux import InterfaceHandler, NamespaceHandler, VethHandler

from lsm.deploy.registry import HandlerRegistry
from lsm.errors import ModelError
from lsm.model import Model, Resource, load_model, refine, validate
from tests.handlers import run
from tests.model import inst, uid
from tests.netlab import links, namespaces, netns_prefix, ping

__all__ = ["netns_prefix"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def router_port() -> Model:
    return load_model(EXAMPLES / "router_port_linux")


def tunnel_model() -> Model:
    return load_model(EXAMPLES / "tunnel_linux")


def router(n: int, prefix: str = "lsmt-") -> dict[str, Any]:
    return inst(n, {"mgmt_ip": f"10.0.0.{n}", "name": f"{prefix}r{n}"})


def port(n: int, router_n: int, name: str, mtu: int = 1500, address: str | None = None) -> dict[str, Any]:
    return inst(n, {"name": name, "router": uid(router_n), "mtu": mtu, "address": address})


def tunnel(n: int, a: int, b: int, name: str = "tun1", mtu: int = 1400) -> dict[str, Any]:
    attributes = {"name": name, "a": uid(a), "b": uid(b), "mtu": mtu}
    return inst(n, attributes | {"address_a": "10.9.0.1/24", "address_b": "10.9.0.2/24"})


def by_id(resources: list[Resource]) -> dict[str, Resource]:
    return {r.id: r for r in resources}


def test_a_router_with_ports_is_a_namespace_and_interfaces_requiring_it() -> None:
    ports = [port(11, 1, "eth0", 1400, "192.0.2.1/24"), port(12, 1, "eth1")]
    result = refine(router_port(), {"router": [router(1)], "port": ports})
    resources = by_id(result.sets[uid(1)])
    assert sorted(resources) == [
        "linux::Interface[10.0.0.1,name=eth0]",
        "linux::Interface[10.0.0.1,name=eth1]",
        "linux::Namespace[10.0.0.1,name=lsmt-r1]",
    ]
    eth0 = resources["linux::Interface[10.0.0.1,name=eth0]"]
    assert eth0.attributes() == {
        "agent": "10.0.0.1",
        "purged": False,
        "name": "eth0",
        "namespace": "lsmt-r1",
        "kind": "veth",
        "peer": "eth0-p",
        "mtu": 1400,
        "address": "192.0.2.1/24",
        "up": True,
    }
    assert eth0.requires_ids == ("linux::Namespace[10.0.0.1,name=lsmt-r1]",)
    assert result.shared == []


def test_the_linux_types_are_deployed_by_the_bundled_handlers() -> None:
    registry = HandlerRegistry(router_port().handlers)
    assert registry.handler_class("linux::Namespace") is NamespaceHandler
    assert registry.handler_class("linux::Interface") is InterfaceHandler
    assert HandlerRegistry(tunnel_model().handlers).handler_class("linux::Veth") is VethHandler


@pytest.mark.parametrize(
    ("ports", "message"),
    [
        ([port(11, 1, "a-very-long-nm")], "at most 13 characters, so that its veth peer"),
        ([port(11, 1, "eth0", mtu=67)], "mtu 67 is outside 68..9216"),
        ([port(11, 1, "eth0"), port(12, 1, "eth0")], "has another port with that name"),
    ],
)
def test_port_rules_fail_the_compile_naming_the_port(ports: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        refine(router_port(), {"router": [router(1)], "port": ports})


def test_a_router_name_that_is_no_namespace_name_fails_the_compile() -> None:
    bad = inst(1, {"mgmt_ip": "10.0.0.1", "name": "-bad"})
    with pytest.raises(ModelError, match=r"namespace name '-bad' must be 1\.\.64 characters"):
        refine(router_port(), {"router": [bad], "port": []})


def test_deleting_a_router_that_still_has_ports_fails_its_validation() -> None:
    with pytest.raises(ModelError, match="owner router"):
        validate(router_port(), {"router": [], "port": [port(11, 1, "eth0")]})


def tunnel_input(prefix: str = "lsmt-", **kw: Any) -> dict[str, list[dict[str, Any]]]:
    return {
        "router": [router(1, prefix), router(2, prefix)],
        "port": [port(11, 1, "eth0", address="192.0.2.1/24"), port(12, 2, "eth0", address="192.0.2.2/24")],
        "tunnel": [tunnel(21, 11, 12, **kw)],
    }


def test_a_tunnel_is_one_veth_between_its_routers_namespaces() -> None:
    result = refine(tunnel_model(), tunnel_input())
    assert [r.id for r in result.sets[uid(21)]] == ["linux::Veth[10.0.0.1,name=tun1]"]
    assert result.sets[uid(21)][0].attributes() == {
        "agent": "10.0.0.1",
        "purged": False,
        "name": "tun1",
        "namespace": "lsmt-r1",
        "peer": "tun1",
        "peer_namespace": "lsmt-r2",
        "mtu": 1400,
        "address": "10.9.0.1/24",
        "peer_address": "10.9.0.2/24",
        "up": True,
        # it waits for the namespaces of the routers' sets by retrying (no cross-set requires)
        "meta": {"retry": 12, "delay": 0.5, "backoff": True, "max_delay": 15.0},
    }
    assert sorted(r.id for r in result.sets[uid(1)]) == [
        "linux::Interface[10.0.0.1,name=eth0]",
        "linux::Namespace[10.0.0.1,name=lsmt-r1]",
    ]


@pytest.mark.parametrize(
    ("instances", "message"),
    [
        ({"name": "a-tunnel-name-too-long"}, "a tunnel name is a link name, at most 15"),
        ({"name": "eth0"}, "a port of its routers has that name already"),
    ],
)
def test_tunnel_rules_fail_the_compile_naming_the_tunnel(instances: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        refine(tunnel_model(), tunnel_input(**instances))


def test_a_tunnel_between_two_ports_of_one_router_fails() -> None:
    instances = tunnel_input()
    instances["port"].append(port(13, 1, "eth1"))
    instances["tunnel"] = [tunnel(21, 11, 13)]
    with pytest.raises(ModelError, match="both ends are on router lsmt-r1"):
        refine(tunnel_model(), instances)


def test_a_compiled_tunnel_deployed_pings_and_its_purge_removes_it(netns_prefix: str, tmp_path: Path) -> None:
    model = tunnel_model()
    registry = HandlerRegistry(model.handlers)
    result = refine(model, tunnel_input(netns_prefix))
    r1, r2 = f"{netns_prefix}r1", f"{netns_prefix}r2"

    def deploy(resources: list[Resource]) -> None:
        # the order the engine takes: a resource after what it requires (namespaces first)
        for r in sorted(resources, key=lambda r: len(r.requires_ids)):
            run(registry.handler_for(r.resource_type), r, tmp_path)

    deploy(result.sets[uid(1)] + result.sets[uid(2)])
    deploy(result.sets[uid(21)])
    assert {r1, r2} <= namespaces() and {"eth0", "eth0-p", "tun1"} <= links(r1)
    assert ping(r1, "10.9.0.2") and ping(r2, "10.9.0.1")

    purged = refine(model, tunnel_input(netns_prefix), purge={uid(21): True})
    deploy(purged.sets[uid(21)])
    assert "tun1" not in links(r1) and "tun1" not in links(r2)
    assert {"eth0", "eth0-p"} <= links(r1)
