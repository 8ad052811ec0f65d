"""The SQL of PostgreSQL session advisory locks: take a set of keys all or nothing, give them back.

Why here: which locks a compile takes, and when, is the compiler's policy
(``lsm.compiler.locks``); the statements that take them are the inventory's, the one layer that
writes SQL. Both statements take a ``bigint[]`` of keys, so a set of locks is one round trip.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, text

_LOCK = text("SELECT k, pg_try_advisory_lock(k) FROM unnest(CAST(:ks AS bigint[])) AS k")
_UNLOCK = text("SELECT pg_advisory_unlock(k) FROM unnest(CAST(:ks AS bigint[])) AS k")


def advisory_key(kind: str, name: str) -> int:
    """A stable signed 64-bit advisory-lock key."""
    return int.from_bytes(
        hashlib.blake2b(f"{kind}:{name}".encode(), digest_size=8).digest(), "big", signed=True
    )


def try_advisory(conn: Connection, keys: list[int]) -> bool:
    """Take every key or none (so two workers never hold half of each other's)."""
    taken = [row[0] for row in conn.execute(_LOCK, {"ks": keys}) if row[1]]
    if len(taken) < len(keys) and taken:
        conn.execute(_UNLOCK, {"ks": taken})
    conn.commit()
    return len(taken) == len(keys)


def unlock_advisory(conn: Connection, keys: list[int]) -> None:
    """Give ``keys`` back (session locks: only the connection that took them can)."""
    conn.execute(_UNLOCK, {"ks": keys})
    conn.commit()


__all__ = ["advisory_key", "try_advisory", "unlock_advisory"]
