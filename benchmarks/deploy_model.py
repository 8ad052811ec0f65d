"""The deploy and orders benchmarks' model: one service whose instance refines into ``std::Null``.

Why the bundled ``std::Null`` (``lsm_handlers.null``) and no handler of our own: the figures
must be those of the handler users deploy, found the way users find it (the ``lsm.handlers``
entry point), so a change to that handler or to the registry shows in the benchmark. Its cost is
nothing, so what is measured is the engine: plan, claim, run under metaparameters, result
writes and the lifecycle feedback.

``nothing`` instances (``orders`` scenario) each refine into one ``std::Null`` on the agent
``agent-<n % 10>`` (``n`` from the instance's ``name``), so orders spread over ten agent names.
"""

from __future__ import annotations

from collections.abc import Iterator

from lsm_handlers.null import Null

import lsm

AGENTS = 10


class Nothing(lsm.ServiceEntity):
    name: str


nothing = lsm.Binding(Nothing, lifecycle="simple", name="nothing")


@lsm.implementation(nothing)
def nothing_resource(n: lsm.Service[Nothing]) -> Iterator[lsm.Resource]:
    digits = "".join(c for c in n.name if c.isdigit()) or "0"
    yield Null(agent=f"agent-{int(digits) % AGENTS}", name=n.name, purged=n.purge_resources)


# -- the order scenario's network (``python -m benchmarks orders --groups/--big``) -------------
# A router owns its ports; a tunnel joins two ports. Each refines into one ``std::Null`` on its
# router's agent. Run with ``selector = "relation_closure"``: a tunnel's compile brings its ports.


class Router(lsm.ServiceEntity):
    name: str


class Port(lsm.ServiceEntity):
    name: str
    router: lsm.Ref[Router]


class Tunnel(lsm.ServiceEntity):
    name: str
    a: lsm.Ref[Port]
    b: lsm.Ref[Port]


router = lsm.Binding(Router, lifecycle="simple", name="router", identity="name")
port = lsm.Binding(Port, lifecycle="simple", name="port", owner=router, relation_to_owner="router")
tunnel = lsm.Binding(Tunnel, lifecycle="simple", name="tunnel", identity="name")


@lsm.implementation(router)
def router_resource(r: lsm.Service[Router]) -> Iterator[lsm.Resource]:
    yield Null(agent=f"router-{r.name}", name=r.name, purged=r.purge_resources)


@lsm.implementation(port)
def port_resource(p: lsm.Service[Port]) -> Iterator[lsm.Resource]:
    yield Null(agent=f"router-{p.router.name}", name=f"{p.router.name}.{p.name}", purged=p.purge_resources)


@lsm.implementation(tunnel)
def tunnel_resource(t: lsm.Service[Tunnel]) -> Iterator[lsm.Resource]:
    yield Null(agent=f"router-{t.a.router.name}", name=f"tunnel.{t.name}", purged=t.purge_resources)
