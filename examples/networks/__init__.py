"""Resource sets: one network per instance, its hosts in the network's own set.

Every ``network`` instance is the root of its own ownership tree, so it gets its own resource
set (named after the instance id) holding its ``hosts`` ``net::Host`` resources. Every network
also produces the same ``net::AgentConfig`` resource, shared by all: 1000 networks of 5 hosts
refine into 1000 sets of 5 hosts plus 1 shared resource (5001 resources). Changing one
network's ``hosts`` changes exactly one set, which a partial compile replaces on its own.

Load it by path: ``lsm.load_model("examples/networks")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from lsm_handlers.config import config_handlers
from pydantic import Field

import lsm

MAX_HOSTS = 250 * 250


class Network(lsm.ServiceEntity):
    """A network of identical hosts, deployed by the agent named after the network."""

    name: lsm.Name
    #: the hosts' addresses are ``10.0.<i // 250>.<i % 250 + 1>``: the plan holds 250 x 250
    hosts: Annotated[int, lsm.rw_plus, Field(ge=0, le=MAX_HOSTS)] = 5


network = lsm.Binding(Network, lifecycle="simple", name="network", identity="name")


class Host(lsm.Resource, type="net::Host", id_attribute="name"):
    name: str
    ip: str


class AgentConfig(lsm.Resource, type="net::AgentConfig", id_attribute="name"):
    """Agent settings: one for the whole model, so no network may own it."""

    name: str
    autostart: bool = True


#: These types have no handler of their own: each resource is deployed as one JSON file under the
#: agent's state directory (docs/handlers.md §6), so orders reach ``up`` with no set-up and no root.
HANDLERS = config_handlers(Host, AgentConfig)


@lsm.implementation(network)
def network_hosts(net: lsm.Service[Network]) -> Iterator[lsm.Resource | lsm.Shared]:
    for i in range(net.hosts):
        yield Host(
            agent=net.name, name=f"h{i}", ip=f"10.0.{i // 250}.{i % 250 + 1}", purged=net.purge_resources
        )
    yield lsm.shared(AgentConfig(agent="internal", name="networks"))
