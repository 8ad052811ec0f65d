"""Owner names of claims held by processes that are gone: how tests stand in for a worker killed
with kill -9 (``lsm.store.leases.owner_gone`` checks the process of an owner on this host)."""

from __future__ import annotations

import socket
import subprocess
import sys


def dead_pid() -> int:
    """The pid of a process of this host that has exited (a killed worker's)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def dead_owner(role: str) -> str:
    """An owner name (``role@host:pid:nonce``) whose process ran on this host and has exited."""
    return f"{role}@{socket.gethostname()}:{dead_pid()}:0dead0"
