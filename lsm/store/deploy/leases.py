"""The names of the deploy agents' leases: one per agent name of an environment, one per process.

Why here, low in the layers: the agents take these leases (``lsm.deploy``), while diagnosis
(``lsm.facade.diagnosis``) and the metrics read them back; a name formatted in one place is the
same name for all of them, and none of the readers has to load the deploy agent for it.
"""

from __future__ import annotations

#: the lease of one agent name of an environment: ``agent:<env_id>:<agent>``
AGENT_PREFIX = "agent:"
#: the presence lease of an agent process: ``agent-process:<owner>`` (renewed by its keepalive);
#: it sorts before every ``agent:`` lease, which puts it first in the global lock order
PROCESS_PREFIX = "agent-process:"


def lease_name(env_id: str, agent: str) -> str:
    """The lease that lets one process at a time deploy ``agent``'s resources of ``env_id``."""
    return f"{AGENT_PREFIX}{env_id}:{agent}"


def process_lease_name(owner: str) -> str:
    """The presence lease of the agent process ``owner``: its claims are its own while it lives."""
    return PROCESS_PREFIX + owner


__all__ = ["AGENT_PREFIX", "PROCESS_PREFIX", "lease_name", "process_lease_name"]
