"""One worker process per SQLite database, and a clear refusal for a second one.

Why: SQLite has one writer at a time and no advisory locks across processes; a second worker
process would claim the same batches. So the process that runs compiles on a SQLite file (``lsm
server`` with its embedded worker, or ``lsm worker``) holds the lease ``sqlite-worker``; a
second one refuses to start and names the holder. A holder killed with -9 stops renewing: its
lease expires within ``ttl`` seconds, or at once when it ran on this host and its pid is gone.
Scale out on PostgreSQL instead, where workers coordinate through the database.
"""

from __future__ import annotations

from lsm.errors import ConfigurationError
from lsm.services.leases import Lease, process_gone, process_identity
from lsm.store.database import Database
from lsm.store.leases import SQLITE_WORKER

NAME = SQLITE_WORKER


class AnotherWorkerRunning(ConfigurationError):
    """A second compile worker process on one SQLite database."""


def hold_sqlite_worker(db: Database, role: str, *, ttl: float = 15.0) -> Lease:
    """Take the SQLite worker lease for this process or raise ``AnotherWorkerRunning``."""
    owner, info = process_identity(role)
    lease = Lease(db, NAME, owner, ttl=ttl, info=info)
    holder = lease.acquire()
    if not lease.held and _gone(holder.info):
        holder = lease.acquire(steal=True)
    if not lease.held:
        who = holder.info
        raise AnotherWorkerRunning(
            f"another compile worker already serves this SQLite database: {who.get('role', '?')} "
            f"pid {who.get('pid', '?')} on {who.get('host', '?')}, "
            f"since {holder.acquired_at:%Y-%m-%d %H:%M:%S} UTC. SQLite allows one worker process: "
            "stop that one (or run this one without a worker), or move to PostgreSQL to run several.",
            holder=holder.owner,
        )
    return lease


def _gone(info: dict[str, object]) -> bool:
    """The holder ran on this host and its process no longer exists (killed, crashed)."""
    return process_gone(dict(info))
    return False
