"""The seeds' partial model, in Python: network 0 turns out to need only one host.

Export it with ``lsm export examples/resource_sets/partial.py --partial`` on top of ``full.py``:
the set ``network-0`` is replaced by one host, every other network stays as it was (its set is
not in this export). The result equals ``full_result.py`` exported whole.
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


# turns out network 0 only needs one host
network(0, range(1))
