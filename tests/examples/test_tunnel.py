"""examples/tunnel: a tunnel between two ports of two routers, and the selectors it needs.

The tunnel's set copies its ports' MTUs, but the tunnel is in neither router's ownership tree.
These tests drive the engine (lifecycle, compile queue, desired state) on every backend and show
that the custom ``tunnel`` selector and the bundled ``relation_closure`` selector both keep the
tunnel's set right after a port changes (partial == full), and precisely how the default
``owner_tree`` selector does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lsm.facade import RequestContext
from lsm.model import load_model
from lsm.orchestration import ResourceOutcome
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.compile_reports import CompileOut
from lsm.schemas.inventory import InstanceOut
from tests.compiler.test_partial_equals_full import assert_partial_equals_full

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "tunnel")
#: the environment of ``engine_factory`` engines (``None`` = the configured default one)
ENV = None


def endpoint_id(agent: str, tunnel: str = "t1") -> str:
    return f"net::TunnelEndpoint[{agent},name={tunnel}]"


@dataclass
class Net:
    """Ids of a small network: routers ``r<n>`` (10.0.0.<n>) with one port ``eth0`` each."""

    engine: ApiRuntime
    routers: dict[int, str]
    ports: dict[int, str]
    tunnels: dict[str, str]

    def get(self, entity: str, instance_id: str) -> InstanceOut:
        return self.engine.facades.inventory.get_instance(RequestContext.local(ENV), entity, instance_id)

    def latest(self) -> dict[str, Any]:
        """The newest desired-state version, with its sets."""
        versions = self.engine.facades.desired_state.list_desired_states(RequestContext.local(ENV), limit=1)
        return self.engine.facades.desired_state.desired_state(
            RequestContext.local(ENV), versions[0].version
        ).model_dump()

    def resource(self, resource_id: str) -> dict[str, Any]:
        """A resource of the newest desired state, with the set it is in."""
        versions = self.engine.facades.desired_state.list_desired_states(RequestContext.local(ENV), limit=1)
        resources = self.engine.facades.desired_state.desired_state_resources(
            RequestContext.local(ENV), versions[0].version
        )
        return next(r.model_dump() for r in resources if r.id == resource_id)

    def last_export(self) -> CompileOut:
        """The newest exporting (non-validation) compile that ran (not merged into another)."""
        compiles = self.engine.facades.compiles.list_compiles(RequestContext.local(ENV), limit=1000)
        return next(c for c in compiles if c.kind != "validation" and c.merged_into is None)

    def deploy(self, entity: str, instance_id: str) -> InstanceOut:
        """Report a successful deploy of the instance's resources (resource-based transfer)."""
        instance = self.get(entity, instance_id)
        outcome = ResourceOutcome(instance.id, instance.desired_state_version, True)
        self.engine.orchestrator.execute(self.engine.context(ENV), outcome)
        return self.get(entity, instance_id)

    def deploy_all(self) -> None:
        for entity, ids in (("router", self.routers), ("port", self.ports), ("tunnel", self.tunnels)):
            for instance_id in ids.values():
                assert self.deploy(entity, instance_id).state == "up"

    def update(self, entity: str, instance_id: str, **attributes: Any) -> None:
        instance = self.get(entity, instance_id)
        self.engine.facades.inventory.update_instance(
            RequestContext.local(ENV),
            entity,
            instance_id,
            current_version=instance.version,
            attributes=attributes,
        )
        self.engine.processing.drain()

    def add_tunnel(self, name: str, a: int, b: int) -> InstanceOut:
        attributes = {"name": name, "a": self.ports[a], "b": self.ports[b], "key": f"key-{name}"}
        created = self.engine.facades.inventory.create_instance(
            RequestContext.local(ENV), "tunnel", attributes
        )
        self.tunnels[name] = created.id
        self.engine.processing.drain()
        return self.get("tunnel", created.id)


def build(
    engine: ApiRuntime, routers: int = 2, tunnels: tuple[tuple[str, int, int], ...] = (("t1", 1, 2),)
) -> Net:
    """Routers ``1..routers`` (a port each) and ``(name, a, b)`` tunnels between those ports,
    created through the lifecycle (validation, promote, exporting compile): all ``creating``."""
    net = Net(engine, {}, {}, {})
    for n in range(1, routers + 1):
        attributes = {"mgmt_ip": f"10.0.0.{n}", "name": f"r{n}"}
        net.routers[n] = engine.facades.inventory.create_instance(
            RequestContext.local(ENV), "router", attributes
        ).id
    engine.processing.drain()
    for n, router_id in net.routers.items():
        net.ports[n] = engine.facades.inventory.create_instance(
            RequestContext.local(ENV), "port", {"router": router_id, "name": "eth0"}
        ).id
    engine.processing.drain()
    for name, a, b in tunnels:
        assert net.add_tunnel(name, a, b).state == "creating"
    return net


def import_up(engine: ApiRuntime) -> Net:
    """The same two-router network imported straight into ``up``, then one full compile."""
    routers = engine.facades.inventory.import_instances(
        RequestContext.local(ENV),
        "router",
        "up",
        [{"mgmt_ip": f"10.0.0.{n}", "name": f"r{n}"} for n in (1, 2)],
    )
    ports = engine.facades.inventory.import_instances(
        RequestContext.local(ENV), "port", "up", [{"router": r, "name": "eth0"} for r in routers]
    )
    tunnels = engine.facades.inventory.import_instances(
        RequestContext.local(ENV),
        "tunnel",
        "up",
        [{"name": "t1", "a": ports[0], "b": ports[1], "key": "key-t1"}],
    )
    done = engine.facades.compiles.request_compile(RequestContext.local(ENV), kind="full")
    engine.processing.drain()
    assert engine.facades.compiles.get_compile(RequestContext.local(ENV), done.id).status == "success"
    return Net(engine, dict(enumerate(routers, 1)), dict(enumerate(ports, 1)), {"t1": tunnels[0]})


# -- the model --------------------------------------------------------------------------------
def test_the_tunnel_is_its_own_root_and_the_model_registers_its_selector() -> None:
    model = load_model(EXAMPLE)
    catalog = model.catalog
    assert catalog.get("tunnel").owner is None
    assert catalog.get("port").owner is catalog.get("router")
    assert {b.lifecycle for b in catalog} == {"simple"}
    assert sorted(model.selectors) == ["tunnel"]


# -- selectors that keep the tunnel's set right -----------------------------------------------
@pytest.mark.parametrize("selector", ["tunnel", "relation_closure"])
def test_a_new_tunnel_exports_one_endpoint_per_side_in_its_own_set(
    engine_factory: Callable[..., ApiRuntime], selector: str
) -> None:
    net = build(engine_factory(EXAMPLE, selector=selector))
    tunnel = net.tunnels["t1"]
    assert sorted(net.latest()["sets"][tunnel]) == [endpoint_id("10.0.0.1"), endpoint_id("10.0.0.2")]
    side_a = net.resource(endpoint_id("10.0.0.1"))
    assert side_a["set"] == tunnel
    assert side_a["attributes"] == {
        "agent": "10.0.0.1",
        "purged": False,
        "name": "t1",
        "port": "eth0",
        "mtu": 1500,
        "peer": "10.0.0.2",
        "key": "key-t1",
    }
    assert side_a["requires"] == []  # rule 6: no requires into the routers' sets
    assert_partial_equals_full(net.engine, net.engine.context(ENV).env_id)


@pytest.mark.parametrize("selector", ["tunnel", "relation_closure"])
def test_changing_a_ports_mtu_recompiles_the_tunnel_in_the_ports_partial_compile(
    engine_factory: Callable[..., ApiRuntime], selector: str
) -> None:
    net = build(engine_factory(EXAMPLE, selector=selector))
    net.deploy_all()
    net.update("port", net.ports[1], mtu=9000)
    assert net.get("port", net.ports[1]).state == "update_inprogress"
    compile_ = net.last_export()
    assert compile_.status == "success", compile_.report
    assert (compile_.requested_ids, compile_.report["ran_as"]) == ([net.ports[1]], "partial")
    assert compile_.report["selected"]["tunnel"] == [net.tunnels["t1"]]
    assert net.resource(endpoint_id("10.0.0.1"))["attributes"]["mtu"] == 9000
    assert net.resource(endpoint_id("10.0.0.2"))["attributes"]["mtu"] == 1500
    assert_partial_equals_full(net.engine, net.engine.context(ENV).env_id)


@pytest.mark.parametrize(
    ("selector", "routers", "tunnels"),
    [("tunnel", [1, 2], ["t1"]), ("relation_closure", [1, 2, 3], ["t1", "t2"])],
)
def test_the_tunnel_selector_stops_one_hop_out_where_relation_closure_takes_the_component(
    engine_factory: Callable[..., ApiRuntime], selector: str, routers: list[int], tunnels: list[str]
) -> None:
    """r1 -t1- r2 -t2- r3: a change of r1's port needs t1 and r2 (t1 reads r2), not t2 or r3."""
    engine = engine_factory(EXAMPLE, selector=selector)
    net = build(engine, routers=3, tunnels=(("t1", 1, 2), ("t2", 2, 3)))
    net.deploy_all()
    net.update("port", net.ports[1], mtu=9000)
    assert net.last_export().report["selected"] == {
        "router": sorted(net.routers[n] for n in routers),
        "port": sorted(net.ports[n] for n in routers),  # one port per router, numbered alike
        "tunnel": sorted(net.tunnels[name] for name in tunnels),
    }
    assert_partial_equals_full(engine, engine.context(ENV).env_id)


@pytest.mark.parametrize("selector", ["tunnel", "relation_closure"])
def test_a_compile_requested_for_a_tunnel_brings_both_routers_trees(
    engine_factory: Callable[..., ApiRuntime], selector: str
) -> None:
    net = build(engine_factory(EXAMPLE, selector=selector))
    requested = net.engine.facades.compiles.request_compile(
        RequestContext.local(ENV), kind="partial", instance_ids=[net.tunnels["t1"]]
    )
    net.engine.processing.drain()
    done = net.engine.facades.compiles.get_compile(RequestContext.local(ENV), requested.id)
    assert done.status == "success", done.report
    assert done.report["selected"] == {
        "router": sorted(net.routers.values()),
        "port": sorted(net.ports.values()),
        "tunnel": [net.tunnels["t1"]],
    }


@pytest.mark.parametrize("selector", ["tunnel", "relation_closure"])
def test_a_deleted_tunnel_purges_its_endpoints_then_its_set_is_deleted(
    engine_factory: Callable[..., ApiRuntime], selector: str
) -> None:
    net = build(engine_factory(EXAMPLE, selector=selector))
    net.deploy_all()
    tunnel = net.get("tunnel", net.tunnels["t1"])
    net.engine.facades.inventory.delete_instance(
        RequestContext.local(ENV), "tunnel", tunnel.id, current_version=tunnel.version
    )
    net.engine.processing.drain()
    assert net.get("tunnel", tunnel.id).state == "deleting"
    assert net.resource(endpoint_id("10.0.0.1"))["attributes"]["purged"] is True
    assert net.deploy("tunnel", tunnel.id).state == "terminated"
    net.engine.processing.drain()
    assert tunnel.id not in net.latest()["sets"]
    assert set(net.latest()["sets"]) == set(net.routers.values())
    assert_partial_equals_full(net.engine, net.engine.context(ENV).env_id)
    # the terminated tunnel still has its relation rows; a port change must ignore it
    net.update("port", net.ports[1], mtu=9000)
    compile_ = net.last_export()
    assert (compile_.status, compile_.report["selected"]["tunnel"]) == ("success", [])
    assert compile_.report["sets_deleted"] == []
    assert_partial_equals_full(net.engine, net.engine.context(ENV).env_id)


@pytest.mark.parametrize("selector", ["tunnel", "relation_closure"])
def test_deleting_a_port_under_a_live_tunnel_breaks_the_tunnels_compiles_once_it_is_terminated(
    engine_factory: Callable[..., ApiRuntime], selector: str
) -> None:
    """A known limit of this model on ``simple``, pinned so that nobody mistakes it for a
    selector bug: nothing stops the delete of a port that a live tunnel refers to.

    The port is purged while ``deleting`` (still in the compile, the tunnel still builds), but
    once it is terminated no compile can hold it: the tunnel's next export fails naming the
    relation, and the previous desired state stays. Delete tunnels before their ports; a
    lifecycle with delete validation (``simple_with_delete_validate``) would refuse it up front.
    """
    net = build(engine_factory(EXAMPLE, selector=selector))
    net.deploy_all()
    port = net.get("port", net.ports[2])
    net.engine.facades.inventory.delete_instance(
        RequestContext.local(ENV), "port", port.id, current_version=port.version
    )
    net.engine.processing.drain()
    assert net.last_export().status == "success"  # deleting: still exported (purged), still readable
    before = net.latest()["version"]
    assert net.deploy("port", port.id).state == "terminated"
    net.engine.processing.drain()
    compile_ = net.last_export()
    assert compile_.status == "failed"
    assert compile_.report["error"]["error"] == "model_error"
    expected = f"attribute 'b' refers to port {port.id}, which is not in this compile"
    assert expected in compile_.report["error"]["message"]
    assert net.latest()["version"] == before


def test_a_tunnel_with_both_ends_on_one_router_is_rejected_naming_the_router(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(EXAMPLE, selector="tunnel")
    net = build(engine, routers=1, tunnels=())
    second = engine.facades.inventory.create_instance(
        RequestContext.local(ENV), "port", {"router": net.routers[1], "name": "eth1"}
    )
    engine.processing.drain()
    net.ports[2] = second.id
    assert net.add_tunnel("t1", 1, 2).state == "rejected"
    last = engine.facades.inventory.instance_log(RequestContext.local(ENV), "tunnel", net.tunnels["t1"])[-1]
    assert last.compile_id is not None
    error = engine.facades.compiles.get_compile(RequestContext.local(ENV), last.compile_id).report["error"]
    assert "tunnel t1: both ends are on router r1" in error["message"]


# -- the default selector: what goes wrong without a custom one -----------------------------------
def test_with_owner_tree_a_new_tunnel_is_rejected_because_its_ports_are_not_in_its_validation(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """The tunnel is its own tree, so its validation compile holds the tunnel alone."""
    net = build(engine_factory(EXAMPLE), tunnels=())
    tunnel = net.add_tunnel("t1", 1, 2)
    assert tunnel.state == "rejected"
    last = net.engine.facades.inventory.instance_log(RequestContext.local(ENV), "tunnel", tunnel.id)[-1]
    assert last.compile_id is not None
    report = net.engine.facades.compiles.get_compile(RequestContext.local(ENV), last.compile_id).report
    assert report["selected"] == {"router": [], "port": [], "tunnel": [tunnel.id]}
    for attribute, port in (("a", net.ports[1]), ("b", net.ports[2])):
        expected = f"attribute '{attribute}' refers to port {port}, which is not in this compile"
        assert expected in report["error"]["message"]


def test_with_owner_tree_a_ports_partial_compile_leaves_the_tunnels_set_stale(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    """The export succeeds (the tunnel's set is simply not replaced) and is silently wrong.

    The tunnel can not be created through the lifecycle with this selector (see above), so the
    network is imported in ``up`` and fully compiled; the port update then goes through the
    lifecycle as usual. Only a complete full compile repairs the tunnel's set: an incremental
    one (the default) trusts the selector exactly as the partial compile did, finds the port
    compiled at its current version, and keeps every set.
    """
    net = import_up(engine_factory(EXAMPLE))
    net.update("port", net.ports[1], mtu=9000)
    assert net.get("port", net.ports[1]).state == "update_inprogress"
    compile_ = net.last_export()
    assert (compile_.status, compile_.report["ran_as"]) == ("success", "partial")
    assert compile_.report["selected"] == {"router": [net.routers[1]], "port": [net.ports[1]], "tunnel": []}
    assert net.resource("net::Interface[10.0.0.1,name=eth0]")["attributes"]["mtu"] == 9000
    stale = net.resource(endpoint_id("10.0.0.1"))
    assert (stale["set"], stale["attributes"]["mtu"]) == (net.tunnels["t1"], 1500)
    env_id = net.engine.context(ENV).env_id
    with pytest.raises(AssertionError, match=re.escape(endpoint_id("10.0.0.1"))):
        assert_partial_equals_full(net.engine, env_id)
    net.engine.facades.compiles.request_compile(RequestContext.local(ENV), kind="full")
    net.engine.processing.drain()
    assert net.resource(endpoint_id("10.0.0.1"))["attributes"]["mtu"] == 1500
    net.engine.facades.compiles.request_compile(RequestContext.local(ENV), kind="full", incremental=False)
    net.engine.processing.drain()
    assert net.resource(endpoint_id("10.0.0.1"))["attributes"]["mtu"] == 9000
    assert_partial_equals_full(net.engine, env_id)
