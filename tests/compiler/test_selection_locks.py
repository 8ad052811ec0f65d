"""Selection locks: a validation round locks the selections of all its validations at once.

Each selection is locked whole or not at all, whether another thread (in process) or another
worker (PostgreSQL advisory locks, another connection) holds part of it; on PostgreSQL the
round is one statement, and giving the round back is one more.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from lsm.compiler.locks import EnvironmentLocks
from lsm.store.database import Database

#: advisory locks belong to the whole PostgreSQL database, not to a test's schema: every test
#: module run (and xdist worker) locks names of its own environment
ENV = f"env-{uuid.uuid4().hex}"
KEYS = "abcdef"


@contextmanager
def competitor(db: Database, locks: EnvironmentLocks) -> Iterator[EnvironmentLocks]:
    """Locks held by someone else: on SQLite another thread of the one worker process (the same
    ``EnvironmentLocks``), on PostgreSQL another worker (its own database connections)."""
    if db.is_sqlite:
        yield locks
        return
    other = Database(db.url, schema=db.schema)
    try:
        yield EnvironmentLocks(other)
    finally:
        other.dispose()


def free(locks: EnvironmentLocks, key: str) -> bool:
    """Whether ``key`` can be locked by ``locks`` now (given back at once)."""
    probe = locks.selections(ENV)
    try:
        return probe.try_lock_many([[key]])[0]
    finally:
        probe.release()


@contextmanager
def statements(db: Database, *, failing: str | None = None) -> Iterator[list[str]]:
    """The statements sent on ``db``'s write engine meanwhile; with ``failing``, any statement
    that contains it raises ``RuntimeError`` instead of being sent."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if failing is not None and failing in statement:
            raise RuntimeError(f"the statement with {failing} failed")
        seen.append(statement)

    event.listen(db.write_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(db.write_engine, "before_cursor_execute", record)


def test_a_round_locks_its_free_selections_and_refuses_one_held_elsewhere_whole(db: Database) -> None:
    locks = EnvironmentLocks(db)
    with competitor(db, locks) as other:
        theirs = other.selections(ENV)
        assert theirs.try_lock_many([["b"]]) == [True]
        mine = locks.selections(ENV)
        with statements(db) as seen:
            got = mine.try_lock_many([["a1", "a2"], ["b", "c"], ["d"]])
        assert got == [True, False, True]
        if not db.is_sqlite:
            # one statement tries the three selections, one gives back the "c" it took
            assert sum("pg_try_advisory_lock" in s for s in seen) == 1
            assert sum("pg_advisory_unlock" in s for s in seen) == 1
        # the refused selection left nothing held: "c" is free for anyone
        assert free(other, "c")
        assert not free(other, "a1") and not free(other, "d")
        with statements(db) as seen:
            mine.release()
        if not db.is_sqlite:
            assert sum("pg_advisory_unlock" in s for s in seen) == 1
        assert all(free(other, k) for k in ("a1", "a2", "d"))
        assert not free(locks, "b")  # still theirs
        theirs.release()
        assert free(locks, "b")


def test_a_selection_overlapping_an_earlier_one_of_its_round_is_refused(db: Database) -> None:
    """Taken or not, the earlier one goes first: ["c"] waits behind the refused ["b", "c"]."""
    locks = EnvironmentLocks(db)
    mine = locks.selections(ENV)
    assert mine.try_lock_many([["a", "b"], ["b", "c"], [], ["c"], ["d"]]) == [True, False, True, False, True]
    mine.release()
    assert all(free(locks, k) for k in "abc")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    held=st.sets(st.sampled_from(KEYS), max_size=3),
    sets=st.lists(st.sets(st.sampled_from(KEYS), max_size=3), max_size=5),
)
def test_each_selection_is_locked_whole_or_not_at_all(
    db: Database, held: set[str], sets: list[set[str]]
) -> None:
    """Against a model: a selection is locked when none of its keys is held by the competitor
    or named by an earlier selection of the same round (taken or not); afterwards exactly the
    locked selections' keys are held."""
    locks = EnvironmentLocks(db)
    with competitor(db, locks) as other:
        theirs, mine = other.selections(ENV), locks.selections(ENV)
        probe = locks if db.is_sqlite else EnvironmentLocks(db)
        try:
            assert theirs.try_lock_many([sorted(held)]) == [True]
            expected, taken, asked = [], set(held), set[str]()
            for keys in sets:
                ok = not keys & (held | asked)
                expected.append(ok)
                asked |= keys
                if ok:
                    taken |= keys
            assert mine.try_lock_many([sorted(k) for k in sets]) == expected
            assert {k for k in KEYS if not free(probe, k)} == taken
            mine.release()
            assert {k for k in KEYS if not free(probe, k)} == held
            theirs.release()
            assert all(free(probe, k) for k in KEYS)
        finally:
            mine.release()
            theirs.release()


@pytest.mark.parametrize("twice", [False, True])
def test_a_failed_statement_leaves_nothing_held(db: Database, twice: bool) -> None:
    """A round whose lock statement raises gives back what it took in process."""
    if db.is_sqlite:
        pytest.skip("SQLite takes no advisory locks: nothing to fail")
    locks = EnvironmentLocks(db)
    mine = locks.selections(ENV)
    if twice:
        assert mine.try_lock_many([["x"]]) == [True]  # a connection with a lock already

    with statements(db, failing="pg_try_advisory_lock"), pytest.raises(RuntimeError):
        mine.try_lock_many([["a"], ["b"]])
    mine.release()
    assert all(free(locks, k) for k in "abx")


def test_a_failed_release_leaves_nothing_held(db: Database) -> None:
    """An unlock statement that fails: the threads' part is given back all the same, and the
    connection is discarded rather than pooled, so its session's locks end with it."""
    if db.is_sqlite:
        pytest.skip("SQLite takes no advisory locks: nothing to fail")
    locks = EnvironmentLocks(db)
    mine = locks.selections(ENV)
    assert mine.try_lock_many([["a"], ["b"]]) == [True, True]

    with statements(db, failing="pg_advisory_unlock"), pytest.raises(RuntimeError):
        mine.release()
    with competitor(db, locks) as other:  # another worker: only the server's locks count there
        assert free(other, "a") and free(other, "b")
    assert free(locks, "a") and free(locks, "b")  # this process: its own record of them is gone
