"""``router_port`` on a real Linux network lab: a router is a namespace, a port an interface in it.

The service model is ``examples/router_port``'s (routers own their ports: one tree and one
resource set per router), with one more port attribute, its ``address`` (CIDR). The resources
are the bundled ``linux::`` types (``lsm_handlers.linux``, docs/handlers.md §5), deployed by
the handlers the ``lsm.handlers`` entry points register, so nothing here registers a handler:

* a router -> ``linux::Namespace`` named after the router (agent = the router's ``mgmt_ip``);
* a port -> ``linux::Interface``: a veth end named after the port, its peer ``<name>-p`` kept in
  the same namespace, with the port's MTU and address, requiring its router's namespace.

Deploying needs root (``ip netns add``). The model rules of ``router_port`` hold (MTU within
68..9216, one port name per router), plus Linux's: a router name is a namespace name (1..64
characters), a port name at most 13 characters so that its peer's name fits the kernel's 15.

Load it by path: ``lsm.load_model("examples/router_port_linux")``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Annotated

from lsm_handlers.linux import LINK_NAME_MAX, Interface, Namespace

import lsm
from lsm.errors import ModelError

MTU_RANGE = range(68, 9217)
#: the peer of a port's veth end is named ``<port name><PEER_SUFFIX>``
PEER_SUFFIX = "-p"
PORT_NAME_MAX = LINK_NAME_MAX - len(PEER_SUFFIX)


class Router(lsm.ServiceEntity):
    """A router: a network namespace named ``name``, deployed by the agent ``mgmt_ip``."""

    mgmt_ip: str
    name: Annotated[str, lsm.rw_plus]


class Port(lsm.ServiceEntity):
    """A port of a router: an interface in its namespace; it lives and dies with its router."""

    name: str
    router: lsm.Ref[Router]
    mtu: Annotated[int, lsm.rw_plus] = 1500
    address: Annotated[str | None, lsm.rw_plus] = None


router = lsm.Binding(Router, lifecycle="simple_with_delete_validate", name="router", identity="mgmt_ip")
port = lsm.Binding(
    Port, lifecycle="simple_with_delete_validate", name="port", owner=router, relation_to_owner="router"
)


def port_names() -> dict[tuple[str, str], list[str]]:
    """(router id, port name) -> ids of the ports of this compile with that name on that router."""

    def index() -> dict[tuple[str, str], list[str]]:
        found: dict[tuple[str, str], list[str]] = defaultdict(list)
        for other in lsm.all(port):
            found[(str(other["attributes"]["router"]), other["attributes"]["name"])].append(str(other["id"]))
        return found

    return lsm.current_compile().memo("router_port_linux.port_names", index)


@lsm.implementation(router)
def router_namespace(r: lsm.Service[Router]) -> Iterator[lsm.Resource]:
    yield Namespace(agent=r.mgmt_ip, name=r.name, purged=r.purge_resources)


@lsm.implementation(port)
def port_interface(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    if p.mtu not in MTU_RANGE:
        raise ModelError(f"port {p.name}: mtu {p.mtu} is outside {MTU_RANGE.start}..{MTU_RANGE.stop - 1}")
    if len(p.name) > PORT_NAME_MAX:
        raise ModelError(
            f"port {p.name}: a name of at most {PORT_NAME_MAX} characters, so that its veth peer "
            f"{p.name}{PEER_SUFFIX} fits Linux's {LINK_NAME_MAX}"
        )
    others = [other for other in port_names()[(p.router.id, p.name)] if other != p.id]
    if others:
        raise ModelError(
            f"port {p.name}: router {p.router.name} has another port with that name: {others[0]}"
        )
    yield Interface(
        agent=p.router.mgmt_ip,
        name=p.name,
        namespace=p.router.name,
        kind="veth",
        peer=f"{p.name}{PEER_SUFFIX}",
        mtu=p.mtu,
        address=p.address,
        purged=p.purge_resources,
        requires=[Namespace.resource_id(p.router.mgmt_ip, p.router.name)],
    )
