"""The SQL of PostgreSQL session advisory locks: take a set of keys all or nothing, give them back.

Why here: which locks a compile takes, and when, is the compiler's policy
(``lsm.compiler.locks``); the statements that take them are the store's, the one layer that
writes SQL. Both statements take a ``bigint[]`` of keys, so a set of locks is one round trip,
and so are many sets (``try_advisory_sets``: a validation round locks the selections of all its
validations at once, where a round trip per selection made a round slow on PostgreSQL).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, text

#: one row per key, in the array's order (``WITH ORDINALITY``: a key may come twice)
_LOCK = text(
    "SELECT pg_try_advisory_lock(t.k) FROM unnest(CAST(:ks AS bigint[])) WITH ORDINALITY AS t(k, n) "
    "ORDER BY t.n"
)
_UNLOCK = text("SELECT pg_advisory_unlock(k) FROM unnest(CAST(:ks AS bigint[])) AS k")


def advisory_key(kind: str, name: str) -> int:
    """A stable signed 64-bit advisory-lock key."""
    return int.from_bytes(
        hashlib.blake2b(f"{kind}:{name}".encode(), digest_size=8).digest(), "big", signed=True
    )


def try_advisory_sets(conn: Connection, sets: list[list[int]]) -> list[bool]:
    """Take each set of keys whole or not at all (so two workers never hold half of each
    other's), in two round trips at most: one statement tries every key of every set, a second
    gives back the keys of the sets not taken whole. Whether each set was taken, in order.

    A key named by two sets is tried twice and, when free, held twice (session advisory locks
    stack): each set then gives back its own count, as ``unlock_advisory`` of that set would.
    """
    every = [k for keys in sets for k in keys]
    got = [bool(row[0]) for row in conn.execute(_LOCK, {"ks": every})] if every else []
    outcomes: list[bool] = []
    back: list[int] = []
    start = 0
    for keys in sets:
        mine = got[start : start + len(keys)]
        start += len(keys)
        whole = all(mine)
        outcomes.append(whole)
        if not whole:
            back.extend(k for k, taken in zip(keys, mine, strict=True) if taken)
    if back:
        conn.execute(_UNLOCK, {"ks": back})
    conn.commit()
    return outcomes


def unlock_advisory(conn: Connection, keys: list[int]) -> None:
    """Give ``keys`` back (session locks: only the connection that took them can)."""
    conn.execute(_UNLOCK, {"ks": keys})
    conn.commit()


__all__ = ["advisory_key", "try_advisory_sets", "unlock_advisory"]
