"""The seeds' "comparable complete model": what full.py and then partial.py amount to.

Exported whole (``lsm export examples/resource_sets/full_result.py``) it gives the desired state
that ``full.py`` followed by ``partial.py --partial`` gives.
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


# network 0 has one host, the 999 others five each
network(0, range(1))
for i in range(1, 1000):
    network(i, range(5))
