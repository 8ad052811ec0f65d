"""The seeds' resource-set example, in Python: 1,000 networks of 5 hosts each.

Each network is modelled fully independent from the others: the Host resources of a network
are all part of the same resource set, ``network-<id>``. Export it with ``lsm export
examples/resource_sets/full.py`` (a full export: the first version of an environment).
"""

import lsm


class Host(lsm.Resource, type="example::Host", id_attribute="name"):
    """A host of a network (Inmanta's ``index Host(network, id)``: the name holds both)."""

    network: int
    host: int
    name: str


class AgentConfig(lsm.Resource, type="std::AgentConfig", id_attribute="agentname"):
    autostart: bool
    agentname: str


def network(network_id: int, hosts: range) -> lsm.ResourceSet:
    # The Host resources for a network are all part of the same resource set
    resource_set = lsm.ResourceSet(name=f"network-{network_id}")
    for host_id in hosts:
        resource_set.resources.append(host(network_id, host_id))
    return resource_set


def host(network_id: int, host_id: int) -> Host:
    # Resource that doesn't belong to any resource set and is shared
    lsm.shared(AgentConfig(agent="internal", autostart=True, agentname="host_agent"))
    return Host(agent="host_agent", network=network_id, host=host_id, name=f"{network_id}-{host_id}")


# create 1000 networks with 5 hosts each
for i in range(1000):
    network(i, range(5))
