"""A multi-parent topology: a tunnel between two ports of two routers (docs/semantics.md §3).

Routers own their ports as in ``router_port`` (``port.router`` is ``relation_to_owner``): one
tree and one resource set per router, holding its ``net::Router`` and one ``net::Interface`` per
port. A ``tunnel`` names two ports (``a`` and ``b``) but is owned by nothing: it is the root of
its own tree, and its resource set (named after the tunnel's id) holds one
``net::TunnelEndpoint`` per side, deployed by that side's router (agent = its ``mgmt_ip``).

Why the endpoints copy the port's name and MTU instead of requiring its interface: a resource
of one named set may not require a resource of another named set (docs/semantics.md §4, rule
6), and the tunnel's set is not its routers' set. So the tunnel's resources *depend on* its
ports' attributes without the ownership tree saying so: changing a port's MTU must recompile
the tunnel too. The default ``owner_tree`` selector does not know that (a partial compile of the
port's router tree leaves the tunnel's set stale), and a tunnel's own compile does not bring its
ports along (its refinement then misses them). Two ways out, with this model unchanged:

* ``selector = "tunnel"``: ``TunnelSelector`` (``selector.py``), a small custom selector that
  adds exactly the tunnels and trees this model needs;
* ``selector = "relation_closure"``: the bundled selector that follows every relation, which
  selects the whole connected component (more than needed, no code at all).

Everything is on the ``simple`` lifecycle, which has no delete validation: delete a tunnel
before its ports (a tunnel whose port is terminated fails every compile that holds it).
Load it by path: ``lsm.load_model("examples/tunnel")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from lsm_handlers.config import config_handlers

import lsm
from lsm.errors import ModelError

from .selector import TunnelSelector

#: The environment setting ``selector = "tunnel"`` picks the custom selector (the model wins a
#: name clash with installed selectors; see ``lsm.selection.plugins``).
SELECTORS = {"tunnel": TunnelSelector}


class Router(lsm.ServiceEntity):
    """A router managed through its management address (the agent of its resources)."""

    mgmt_ip: str
    name: Annotated[str, lsm.rw_plus]


class Port(lsm.ServiceEntity):
    """A port of a router; it lives and dies with its router."""

    name: str
    router: lsm.Ref[Router]
    mtu: Annotated[int, lsm.rw_plus] = 1500


class Tunnel(lsm.ServiceEntity):
    """A tunnel between two ports on two different routers; owned by neither."""

    name: str
    a: lsm.Ref[Port]
    b: lsm.Ref[Port]
    key: Annotated[str, lsm.rw_plus]


router = lsm.Binding(Router, lifecycle="simple", name="router", identity="mgmt_ip")
port = lsm.Binding(Port, lifecycle="simple", name="port", owner=router, relation_to_owner="router")
tunnel = lsm.Binding(Tunnel, lifecycle="simple", name="tunnel", identity="name")


class RouterConfig(lsm.Resource, type="net::Router", id_attribute="name"):
    name: str
    mgmt_ip: str


class Interface(lsm.Resource, type="net::Interface", id_attribute="name"):
    name: str
    mtu: int


class TunnelEndpoint(lsm.Resource, type="net::TunnelEndpoint", id_attribute="name"):
    """One side of a tunnel, on the router of its port; ``port``/``mtu`` are copies (see above)."""

    name: str
    port: str
    mtu: int
    peer: str
    key: str


#: These types have no handler of their own: each resource is deployed as one JSON file under the
#: agent's state directory (docs/handlers.md §6), so orders reach ``up`` with no set-up and no root.
HANDLERS = config_handlers(RouterConfig, Interface, TunnelEndpoint)


@lsm.implementation(router)
def router_config(r: lsm.Service[Router]) -> Iterator[lsm.Resource]:
    yield RouterConfig(agent=r.mgmt_ip, name=r.name, mgmt_ip=r.mgmt_ip, purged=r.purge_resources)


@lsm.implementation(port)
def port_interface(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    yield Interface(
        agent=p.router.mgmt_ip,
        name=p.name,
        mtu=p.mtu,
        purged=p.purge_resources,
        requires=[RouterConfig.resource_id(p.router.mgmt_ip, p.router.name)],  # same set: allowed
    )


@lsm.implementation(tunnel)
def tunnel_endpoints(t: lsm.Service[Tunnel]) -> Iterator[lsm.Resource]:
    """Reads both ports and their routers: they must be in every compile that holds the tunnel."""
    ends = (t.a, t.b)
    if t.a.router.id == t.b.router.id:
        # both endpoints would be one resource id on one agent: say so, not "produced twice"
        raise ModelError(f"tunnel {t.name}: both ends are on router {t.a.router.name}")
    for local, remote in (ends, ends[::-1]):
        yield TunnelEndpoint(
            agent=local.router.mgmt_ip,
            name=t.name,
            port=local.name,
            mtu=local.mtu,
            peer=remote.router.mgmt_ip,
            key=t.key,
            purged=t.purge_resources,
        )
