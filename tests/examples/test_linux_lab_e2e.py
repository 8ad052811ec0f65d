"""The Linux network lab end to end through the deploy engine: orders change the kernel.

Why: ``test_linux_variants`` calls the linux handlers directly, in the order the engine would;
this module orders routers, ports and tunnels through the inventory facade of a real engine
(compile worker and deploy agent on one service loop, SQLite and PostgreSQL) and checks the
result with ``ip`` itself: namespaces, links, MTUs, addresses and a ping through a tunnel, and
that deletes remove them. Root only: the ``netns_prefix`` fixture skips with the kernel's
reason elsewhere, and removes every namespace the test made.

What an operator must know, shown here: a port is ordered once its router has left ``start``
(else its validation compile does not see the router: ``rejected``); a tunnel needs
``selector = "relation_closure"``; and a tunnel's veth, which can not ``require`` the routers'
namespaces (another set), waits for them through the model's ``retry`` (the third test).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.inventory import InstanceOut
from lsm.store.deploy.tables import lsm_resource_action
from tests.deploy.conftest import LOCAL, get, order
from tests.netlab import _ip, links, namespaces, netns_prefix, ping

__all__ = ["netns_prefix"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: bound of the waits for a state (the tunnel's veth waits for its namespaces by retrying)
WAIT_SECONDS = 60.0


@pytest.fixture
def lab(
    netns_prefix: str, engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> Callable[..., ApiRuntime]:
    """Engines over an example of the lab whose loop compiles and deploys as orders arrive.

    It asks for ``netns_prefix`` before ``engine_factory`` so that pytest stops the engines
    (their agents) before it removes the test's namespaces: no late deploy re-creates one."""

    def make(
        example: str, agents: list[str] | None = None, worker: bool = True, **settings: Any
    ) -> ApiRuntime:
        return engine_factory(
            str(EXAMPLES / example),
            embedded_worker=worker,
            embedded_agent=True,
            config={"state_dir": str(tmp_path / "state"), "agent_names": agents or []},
            **settings,
        )

    return make


def wait_for(
    engine: ApiRuntime, wanted: str, *pairs: tuple[str, str], also: Sequence[ApiRuntime] = ()
) -> list[InstanceOut]:
    """Drain the loops (``engine``'s and ``also``'s) until every instance is in ``wanted``
    (bounded); their final reads."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        for each in (engine, *also):
            each.processing.drain()
        found = [get(engine, entity, ref) for entity, ref in pairs]
        if all(i.state == wanted for i in found) or time.monotonic() > deadline:
            log = engine.facades.inventory.instance_log
            seen = [
                (i.service_entity, i.state, [e.message for e in log(LOCAL, i.service_entity, str(i.id))[-2:]])
                for i in found
                if i.state != wanted
            ]
            if seen:
                pytest.fail(f"not {wanted}: {seen}")
            return found
            return found
        engine.processing.wake()
        time.sleep(0.1)


def link(namespace: str, name: str) -> dict[str, Any]:
    """``ip -j addr show`` of one link in ``namespace``."""
    done = _ip("-n", namespace, "-j", "addr", "show", "dev", name)
    return dict(json.loads(done.stdout)[0])


def global_addresses(info: dict[str, Any]) -> list[str]:
    return [f"{a['local']}/{a['prefixlen']}" for a in info["addr_info"] if a.get("scope") == "global"]


def delete(engine: ApiRuntime, entity: str, ref: str) -> None:
    current = get(engine, entity, ref)
    engine.facades.inventory.delete_instance(LOCAL, entity, ref, current_version=current.version)


def test_router_and_ports_deploy_update_and_delete_in_the_kernel(
    lab: Callable[..., ApiRuntime], netns_prefix: str
) -> None:
    engine = lab("router_port_linux")
    ns = f"{netns_prefix}r1"
    router = order(engine, "router", {"mgmt_ip": "10.0.0.1", "name": ns})
    # an instance in ``start`` is in no other's validation compile (docs/semantics.md §3): a port
    # ordered before its router is validated is rejected ("its owner router ... is not in this
    # compile"), as an operator would see it. Order the ports once the router is up.
    wait_for(engine, "up", ("router", router.id))
    eth0 = order(
        engine, "port", {"name": "eth0", "router": router.id, "mtu": 1400, "address": "192.0.2.1/24"}
    )
    eth1 = order(engine, "port", {"name": "eth1", "router": router.id, "address": "198.51.100.1/24"})
    wait_for(engine, "up", ("router", router.id), ("port", eth0.id), ("port", eth1.id))

    assert ns in namespaces()
    assert {"lo", "eth0", "eth0-p", "eth1", "eth1-p"} <= links(ns)
    assert (link(ns, "eth0")["mtu"], global_addresses(link(ns, "eth0"))) == (1400, ["192.0.2.1/24"])
    assert (link(ns, "eth1")["mtu"], global_addresses(link(ns, "eth1"))) == (1500, ["198.51.100.1/24"])
    assert "UP" in link(ns, "eth0")["flags"]

    current = get(engine, "port", eth0.id)
    engine.facades.inventory.update_instance(
        LOCAL, "port", eth0.id, current_version=current.version, attributes={"mtu": 9000}
    )
    wait_for(engine, "up", ("port", eth0.id))
    assert link(ns, "eth0")["mtu"] == 9000 and link(ns, "eth0-p")["mtu"] == 9000
    assert global_addresses(link(ns, "eth0")) == ["192.0.2.1/24"]

    delete(engine, "port", eth1.id)
    wait_for(engine, "terminated", ("port", eth1.id))
    assert not {"eth1", "eth1-p"} & links(ns) and "eth0" in links(ns)

    delete(engine, "port", eth0.id)
    wait_for(engine, "terminated", ("port", eth0.id))
    delete(engine, "router", router.id)
    wait_for(engine, "terminated", ("router", router.id))
    assert ns not in namespaces()


def test_a_tunnel_between_two_routers_pings_and_its_delete_removes_the_link(
    lab: Callable[..., ApiRuntime], netns_prefix: str
) -> None:
    # a tunnel's compile must bring its ports and routers along (the example's docstring)
    engine = lab("tunnel_linux", selector="relation_closure")
    r1, r2 = f"{netns_prefix}r1", f"{netns_prefix}r2"
    router1 = order(engine, "router", {"mgmt_ip": "10.0.0.1", "name": r1})
    router2 = order(engine, "router", {"mgmt_ip": "10.0.0.2", "name": r2})
    wait_for(engine, "up", ("router", router1.id), ("router", router2.id))  # see the test above
    port1 = order(engine, "port", {"name": "eth0", "router": router1.id, "address": "192.0.2.1/24"})
    port2 = order(engine, "port", {"name": "eth0", "router": router2.id, "address": "192.0.2.2/24"})
    wait_for(engine, "up", ("port", port1.id), ("port", port2.id))
    addresses = {"address_a": "10.9.0.1/24", "address_b": "10.9.0.2/24"}
    tunnel = order(engine, "tunnel", {"name": "tun1", "a": port1.id, "b": port2.id} | addresses)
    everything = [
        ("router", router1.id),
        ("router", router2.id),
        ("port", port1.id),
        ("port", port2.id),
        ("tunnel", tunnel.id),
    ]
    wait_for(engine, "up", *everything)

    assert "tun1" in links(r1) and "tun1" in links(r2)
    assert global_addresses(link(r2, "tun1")) == ["10.9.0.2/24"]
    assert ping(r1, "10.9.0.2") and ping(r2, "10.9.0.1")

    delete(engine, "tunnel", tunnel.id)
    wait_for(engine, "terminated", ("tunnel", tunnel.id))
    assert "tun1" not in links(r1) and "tun1" not in links(r2)
    assert not ping(r1, "10.9.0.2", tries=1)
    assert {"eth0", "eth0-p"} <= links(r1)  # the routers' ports are untouched
    assert [get(engine, e, ref).state for e, ref in everything[:4]] == ["up"] * 4


def veth_errors(engine: ApiRuntime) -> list[str]:
    """The messages of the failed deploy actions of the tunnel's veth."""
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(lsm_resource_action.c.messages).where(
                lsm_resource_action.c.resource_id == "linux::Veth[10.0.0.1,name=tun1]",
                lsm_resource_action.c.action == "error",
            )
        )
        return [m["message"] for row in rows for m in row[0]]


def test_a_tunnel_ordered_before_a_namespace_exists_waits_for_it_by_retrying(
    lab: Callable[..., ApiRuntime], netns_prefix: str
) -> None:
    """The veth can not ``require`` the namespaces (another set): the model's retry carries it."""
    # this engine's agent holds router 1's name only: router 2's namespace is not made yet
    engine = lab("tunnel_linux", agents=["10.0.0.1"], selector="relation_closure")
    r1, r2 = f"{netns_prefix}r1", f"{netns_prefix}r2"
    router1 = order(engine, "router", {"mgmt_ip": "10.0.0.1", "name": r1})
    router2 = order(engine, "router", {"mgmt_ip": "10.0.0.2", "name": r2})
    wait_for(engine, "up", ("router", router1.id))
    wait_for(engine, "creating", ("router", router2.id))
    port1 = order(engine, "port", {"name": "eth0", "router": router1.id, "address": "192.0.2.1/24"})
    port2 = order(engine, "port", {"name": "eth0", "router": router2.id, "address": "192.0.2.2/24"})
    wait_for(engine, "up", ("port", port1.id))
    wait_for(engine, "creating", ("port", port2.id))
    addresses = {"address_a": "10.9.0.1/24", "address_b": "10.9.0.2/24"}
    tunnel = order(engine, "tunnel", {"name": "tun1", "a": port1.id, "b": port2.id} | addresses)

    deadline = time.monotonic() + WAIT_SECONDS
    while not veth_errors(engine) and time.monotonic() < deadline:
        engine.processing.drain()
        time.sleep(0.1)
    assert f"network namespace '{r2}' does not exist" in veth_errors(engine)[0]
    assert get(engine, "tunnel", tunnel.id).state == "creating"  # tries left: not failed
    assert r2 not in namespaces()

    # an agent for router 2 makes its namespace; the veth's next try finds it
    second = lab("tunnel_linux", agents=["10.0.0.2"], worker=False, selector="relation_closure")
    everything = [("router", router2.id), ("port", port2.id), ("tunnel", tunnel.id)]
    wait_for(engine, "up", *everything, also=[second])
    assert ping(r1, "10.9.0.2")
