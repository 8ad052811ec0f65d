"""Tunnels between ports, with the TunnelSelector of the Inmanta LSM partial-compile docs.

The model follows the LSM documentation's custom partial compile example: a ``port`` is a
service of its own (no owner, no resources), and a ``tunnel`` names exactly two ports
(``ports``) and owns one endpoint resource per port, whose name holds the port's name. Every
instance is the root of its own tree, so the set of a tunnel is named after the tunnel.

A tunnel's resources read its ports, so a tunnel's compile must see them: the default
``owner_tree`` selector does not bring them (the refinement then misses them), the selector in
``selector.py`` does. ``selector.py`` is that documentation's ``TunnelSelector`` pasted with only
its import lines changed (``lsm.selection.lsm_compat``); it registers itself with
``global_cache.set_selector_factory``, so the environment setting
``selector = "TunnelSelector"`` picks it.

Load it by path: ``lsm.load_model("examples/tunnel_lsm")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from lsm_handlers.config import config_handlers
from pydantic import Field

import lsm

from . import selector as _selector  # noqa: F401  (registers TunnelSelector)


class Port(lsm.ServiceEntity):
    """A port in a network; it has no configuration of its own."""

    name: str


class Tunnel(lsm.ServiceEntity):
    """A tunnel between two ports."""

    tunnel_id: str
    ports: Annotated[list[lsm.Ref[Port]], Field(min_length=2, max_length=2)]


port = lsm.Binding(Port, lifecycle="simple", name="port", identity="name")
tunnel = lsm.Binding(Tunnel, lifecycle="simple", name="tunnel", identity="tunnel_id")


class TunnelEndpoint(lsm.Resource, type="net::TunnelEndpoint", id_attribute="name"):
    """The configuration of one end of a tunnel, on its port."""

    name: str


#: These types have no handler of their own: each resource is deployed as one JSON file under the
#: agent's state directory (docs/handlers.md §6), so orders reach ``up`` with no set-up and no root.
HANDLERS = config_handlers(TunnelEndpoint)


@lsm.implementation(tunnel)
def tunnel_config(t: lsm.Service[Tunnel]) -> Iterator[lsm.Resource]:
    for end in t.ports:
        yield TunnelEndpoint(agent="internal", name=f"{t.tunnel_id} {end.name}", purged=t.purge_resources)
