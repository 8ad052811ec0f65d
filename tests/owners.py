"""Owner names of claims held by processes that are gone: how tests stand in for a worker killed
with kill -9 (``lsm.store.leases.owner_gone`` checks the process of an owner on this host)."""

from __future__ import annotations

import socket
import subprocess
import sys


def dead_owner(role: str) -> str:
    """An owner name (``role@host:pid:nonce``) whose process ran on this host and has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return f"{role}@{socket.gethostname()}:{child.pid}:0dead0"
