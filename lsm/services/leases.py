"""``Lease``: a named lease held by this process, renewed by the service loop's heartbeat.

Used for what must have one holder at a time across every process of an installation: the
scheduler and the one worker process SQLite allows. Deploy agents hold their names in the same
table (``agent:<env>:<name>``) but take and renew them many at a time (``lsm.deploy.agent``).
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from lsm.store import leases as sql
from lsm.store.database import Database
from lsm.store.leases import process_gone
from lsm.store.tables import LeaseRow, utcnow
from lsm.store.transient import retry_transient


def process_identity(role: str) -> tuple[str, dict[str, Any]]:
    """An owner name unique to this process (and role), and what to tell an operator about it."""
    host, pid = socket.gethostname(), os.getpid()
    return f"{role}@{host}:{pid}:{uuid.uuid4().hex[:8]}", {"host": host, "pid": pid, "role": role}


class Lease:
    def __init__(
        self, db: Database, name: str, owner: str, *, ttl: float = 15.0, info: dict[str, Any] | None = None
    ):
        self.db = db
        self.name = name
        self.owner = owner
        self.ttl = ttl
        self.info = dict(info or {})
        self.held = False

    def acquire(self, *, steal: bool = False) -> LeaseRow:
        """Try to take (or renew) the lease; returns the holder's row (this process's when ``held``)."""
        with self.db.write() as session:
            row = sql.acquire(
                session, self.name, self.owner, now=utcnow(), ttl=self.ttl, info=self.info, steal=steal
            )
            self.held = row.owner == self.owner
            session.flush()
            session.expunge(row)
            return row

    def keep(self) -> bool:
        """Renew a held lease (heartbeat); ``False`` when it was lost (another took it over).
        A lost connection is retried (``lsm.store.transient``): renewing twice is harmless."""
        if not self.held:
            return False

        def renew() -> bool:
            with self.db.write() as session:
                return sql.renew(session, self.name, self.owner, now=utcnow(), ttl=self.ttl)

        self.held = retry_transient(renew, what=f"renewing the {self.name} lease")
        return self.held

    def release(self) -> None:
        if self.held:

            def give_back() -> None:
                with self.db.write() as session:
                    sql.release(session, self.name, self.owner)

            retry_transient(give_back, what=f"giving the {self.name} lease back")
            self.held = False


__all__ = ["Lease", "process_gone", "process_identity"]
