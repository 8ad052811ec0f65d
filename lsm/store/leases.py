"""Named leases (``lsm_lease``): one live holder per name, taken over once it expires.

Why rows and not advisory locks: a lease must also work on SQLite, and must say who holds it
(host, pid, since when) so that a refused process can tell the operator why.
"""

from __future__ import annotations

import os
import re
import socket
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from lsm.store.batches import aware
from lsm.store.tables import LeaseRow

#: the lease of a SQLite database's one compile worker process (``lsm.services.singleton``); named
#: here with the leases, so that reading who holds it does not load the service loop
SQLITE_WORKER = "sqlite-worker"


def acquire(
    session: Session,
    name: str,
    owner: str,
    *,
    now: datetime,
    ttl: float,
    info: dict[str, Any],
    steal: bool = False,
) -> LeaseRow:
    """Take or renew ``name`` for ``owner``; returns the row (``row.owner != owner``: held by another).

    ``steal``: take it even from a live holder (the caller proved the holder is gone).
    """
    expires = now + timedelta(seconds=ttl)
    row = session.get(LeaseRow, name, with_for_update=True)
    if row is None:
        row = LeaseRow(name=name, owner=owner, acquired_at=now, expires_at=expires, info=info)
        try:
            with session.begin_nested():
                session.add(row)
        except IntegrityError:  # another process inserted it first
            existing = session.get(LeaseRow, name, with_for_update=True, populate_existing=True)
            assert existing is not None
            return existing
        return row
    if row.owner != owner and not steal and row.expires_at > now:
        return row
    if row.owner != owner:
        row.acquired_at, row.info = now, info
    row.owner, row.expires_at = owner, expires
    session.add(row)
    return row


def renew(session: Session, name: str, owner: str, *, now: datetime, ttl: float) -> bool:
    result = session.execute(
        update(LeaseRow)
        .where(col(LeaseRow.name) == name, col(LeaseRow.owner) == owner)
        .values(expires_at=now + timedelta(seconds=ttl))
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]  # an UPDATE gives a CursorResult, typed as Result


def release(session: Session, name: str, owner: str) -> None:
    session.execute(delete(LeaseRow).where(col(LeaseRow.name) == name, col(LeaseRow.owner) == owner))


def process_gone(info: dict[str, Any]) -> bool:
    """The holder ran on this host and its process no longer exists (killed, crashed).

    Only a process of this host can be checked; any other holder counts as alive until its
    lease expires.
    """
    pid = info.get("pid")
    if info.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


#: the process part of an owner name (``lsm.services.leases.process_identity``:
#: ``role@host:pid:nonce``, a claim's token adds ``/nonce``)
_OWNER = re.compile(r"@(?P<host>[^:/]+):(?P<pid>\d+):")


def owner_gone(owner: str) -> bool:
    """``process_gone`` for an owner name (a claim's ``lease_owner``): False when the name does
    not say which process holds it."""
    match = _OWNER.search(owner)
    return match is not None and process_gone({"host": match["host"], "pid": int(match["pid"])})


def live_holders(session: Session, names: list[str], *, now: datetime) -> set[str]:
    """Which of these lease names have a live holder: not expired, and not a process of this
    host that is gone (a holder killed with kill -9 is dead at once, not after its lease)."""
    live: set[str] = set()
    for name, expires_at, info in session.execute(
        select(col(LeaseRow.name), col(LeaseRow.expires_at), col(LeaseRow.info)).where(
            col(LeaseRow.name).in_(names)
        )
    ):
        if aware(expires_at) > now and not process_gone(dict(info or {})):
            live.add(name)
    return live
