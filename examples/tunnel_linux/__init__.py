"""``tunnel`` on a real Linux network lab: a tunnel is a veth pair between two routers' namespaces.

Routers own their ports as in ``examples/router_port_linux`` (a router is a ``linux::Namespace``,
a port a ``linux::Interface`` in it). A ``tunnel`` names two ports (``a`` and ``b``) on two
routers and is owned by neither; its resource set holds one ``linux::Veth``: the end ``name`` in
``a``'s router namespace with ``address_a``, the end ``name`` in ``b``'s with ``address_b``, so that
``ip netns exec <router a> ping <address_b>`` answers once it is deployed, and deleting the
tunnel removes the link. The handlers are the bundled ones (docs/handlers.md §5).

Why the veth does not ``require`` the namespaces: they are in the routers' sets and a resource
may not require one of another named set (docs/semantics.md §4, rule 6). So the engine's retry
carries the dependency instead (``VETH_META``): until both namespaces exist the veth's deploy
fails, naming the missing one, and the agent tries again after ``delay`` seconds, doubled up to
``max_delay``, for ``retry`` more tries (about two minutes); meanwhile the tunnel stays
``creating``, and only when the tries are spent does it go to ``failed`` (a redeploy after the
routers are fixed brings it ``up``). The tunnel reads its routers' names and its ports, so its
compile must bring them along: run it with ``selector = "relation_closure"`` (as
``examples/tunnel`` explains), and order a tunnel once its ports are validated (an instance in
``start`` is in no other instance's validation compile, docs/semantics.md §3).

Deploying needs root. A tunnel name is a link name: at most 15 characters, and it must not be the
name of a port of either router. Load it by path: ``lsm.load_model("examples/tunnel_linux")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from lsm_handlers.linux import LINK_NAME_MAX, Interface, Namespace, Veth

import lsm
from lsm.errors import ModelError

PEER_SUFFIX = "-p"
#: the veth waits for its routers' namespaces (in other sets, so no ``requires``) by retrying
VETH_META = lsm.Meta(retry=12, delay=0.5, backoff=True, max_delay=15.0)


class Router(lsm.ServiceEntity):
    """A router: a network namespace named ``name``, deployed by the agent ``mgmt_ip``."""

    mgmt_ip: str
    name: Annotated[str, lsm.rw_plus]


class Port(lsm.ServiceEntity):
    """A port of a router: an interface in its namespace."""

    name: str
    router: lsm.Ref[Router]
    mtu: Annotated[int, lsm.rw_plus] = 1500
    address: Annotated[str | None, lsm.rw_plus] = None


class Tunnel(lsm.ServiceEntity):
    """A veth pair between the namespaces of the routers of ports ``a`` and ``b``."""

    name: str
    a: lsm.Ref[Port]
    b: lsm.Ref[Port]
    address_a: Annotated[str, lsm.rw_plus]
    address_b: Annotated[str, lsm.rw_plus]
    mtu: Annotated[int, lsm.rw_plus] = 1500


router = lsm.Binding(Router, lifecycle="simple", name="router", identity="mgmt_ip")
port = lsm.Binding(Port, lifecycle="simple", name="port", owner=router, relation_to_owner="router")
tunnel = lsm.Binding(Tunnel, lifecycle="simple", name="tunnel", identity="name")


@lsm.implementation(router)
def router_namespace(r: lsm.Service[Router]) -> Iterator[lsm.Resource]:
    yield Namespace(agent=r.mgmt_ip, name=r.name, purged=r.purge_resources)


@lsm.implementation(port)
def port_interface(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    if len(p.name) + len(PEER_SUFFIX) > LINK_NAME_MAX:
        raise ModelError(f"port {p.name}: at most {LINK_NAME_MAX - len(PEER_SUFFIX)} characters")
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


@lsm.implementation(tunnel)
def tunnel_veth(t: lsm.Service[Tunnel]) -> Iterator[lsm.Resource]:
    """Reads both ports' routers: they must be in every compile that holds the tunnel."""
    ra, rb = t.a.router, t.b.router
    if ra.id == rb.id:
        raise ModelError(f"tunnel {t.name}: both ends are on router {ra.name}")
    if len(t.name) > LINK_NAME_MAX:
        raise ModelError(f"tunnel {t.name}: a tunnel name is a link name, at most {LINK_NAME_MAX} characters")
    clash = {t.a.name, f"{t.a.name}{PEER_SUFFIX}", t.b.name, f"{t.b.name}{PEER_SUFFIX}"} & {t.name}
    if clash:
        raise ModelError(f"tunnel {t.name}: a port of its routers has that name already")
    yield Veth(
        agent=ra.mgmt_ip,
        name=t.name,
        namespace=ra.name,
        peer=t.name,
        peer_namespace=rb.name,
        mtu=t.mtu,
        address=t.address_a,
        peer_address=t.address_b,
        purged=t.purge_resources,
        meta=VETH_META,
    )
