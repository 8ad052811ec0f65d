"""An ownership tree: routers own their ports (after the Inmanta LSM documentation).

A ``port`` names its ``router`` (``relation_to_owner``), so a router and all its ports form
one tree and one resource set, named after the router's instance id: the router's
``net::Router`` resource and one ``net::Interface`` per port, each requiring the router
resource. Each router also produces the ``net::AgentConfig`` of its agent, shared.

The port implementation enforces two model rules, so that validation compiles catch a bad
candidate before it is promoted: the MTU must be within 68..9216, and no other port of the same
router in the compile may have the same name (checked through ``lsm.all(port)``, indexed
once per compile).

Load it by path: ``lsm.load_model("examples/router_port")``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Annotated

from lsm_handlers.config import config_handlers

import lsm
from lsm.errors import ModelError

MTU_RANGE = range(68, 9217)


class Router(lsm.ServiceEntity):
    """A router managed through its management address."""

    mgmt_ip: str
    name: Annotated[lsm.Name, lsm.rw_plus]


class Port(lsm.ServiceEntity):
    """A port of a router; it lives and dies with its router."""

    name: lsm.Name
    router: lsm.Ref[Router]
    mtu: Annotated[int, lsm.rw_plus] = 1500
    vlan: Annotated[int | None, lsm.rw_plus] = None


router = lsm.Binding(Router, lifecycle="simple_with_delete_validate", name="router", identity="mgmt_ip")
port = lsm.Binding(
    Port, lifecycle="simple_with_delete_validate", name="port", owner=router, relation_to_owner="router"
)


class RouterConfig(lsm.Resource, type="net::Router", id_attribute="name"):
    name: str
    mgmt_ip: str


class Interface(lsm.Resource, type="net::Interface", id_attribute="name"):
    name: str
    mtu: int
    vlan: int | None = None


class AgentConfig(lsm.Resource, type="net::AgentConfig", id_attribute="name"):
    """The settings of one agent (one per router address); shared, never owned."""

    name: str
    autostart: bool = True


#: These types have no handler of their own: each resource is deployed as one JSON file under the
#: agent's state directory (docs/handlers.md §6), so orders reach ``up`` with no set-up and no root.
HANDLERS = config_handlers(RouterConfig, Interface, AgentConfig)


def port_names() -> dict[tuple[str, str], list[str]]:
    """(router id, port name) -> ids of the ports of this compile with that name on that router.

    Built once per compile (``memo``), so the duplicate check is O(ports), not O(ports^2).
    """

    def index() -> dict[tuple[str, str], list[str]]:
        found: dict[tuple[str, str], list[str]] = defaultdict(list)
        for other in lsm.all(port):
            found[(str(other["attributes"]["router"]), other["attributes"]["name"])].append(str(other["id"]))
        return found

    return lsm.current_compile().memo("router_port.port_names", index)


@lsm.implementation(router)
def router_config(r: lsm.Service[Router]) -> Iterator[lsm.Resource | lsm.Shared]:
    yield RouterConfig(agent=r.mgmt_ip, name=r.name, mgmt_ip=r.mgmt_ip, purged=r.purge_resources)
    yield lsm.shared(AgentConfig(agent="internal", name=r.mgmt_ip))


@lsm.implementation(port)
def port_interface(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    if p.mtu not in MTU_RANGE:
        raise ModelError(f"port {p.name}: mtu {p.mtu} is outside {MTU_RANGE.start}..{MTU_RANGE.stop - 1}")
    others = [other for other in port_names()[(p.router.id, p.name)] if other != p.id]
    if others:
        raise ModelError(
            f"port {p.name}: router {p.router.name} has another port with that name: {others[0]}"
        )
    yield Interface(
        agent=p.router.mgmt_ip,
        name=p.name,
        mtu=p.mtu,
        vlan=p.vlan,
        purged=p.purge_resources,
        requires=[RouterConfig.resource_id(p.router.mgmt_ip, p.router.name)],
    )
