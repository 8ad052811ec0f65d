"""Which database errors are transient, and how they are retried (``lsm.store.transient``)."""

from __future__ import annotations

import itertools
import logging
import sqlite3

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.exc import DisconnectionError, IntegrityError, OperationalError

from lsm.store.transient import Backoff, is_transient, log_failure, retry_transient


def _wrapped(orig: BaseException, *, invalidated: bool = False) -> OperationalError:
    return OperationalError("SELECT 1", None, orig, connection_invalidated=invalidated)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(psycopg.errors.AdminShutdown("terminating connection due to administrator command")),
        _wrapped(psycopg.OperationalError("connection failed: Connection refused")),
        _wrapped(psycopg.errors.DeadlockDetected("deadlock detected")),
        _wrapped(sqlite3.OperationalError("database is locked")),
        _wrapped(RuntimeError("anything"), invalidated=True),
        DisconnectionError("the server closed this pooled connection"),
        psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly"),
    ],
    ids=["admin-shutdown", "refused", "deadlock", "sqlite-locked", "invalidated", "pool", "raw-psycopg"],
)
def test_the_databases_moments_are_transient(error: BaseException) -> None:
    assert is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(sqlite3.OperationalError("no such table: lsm_instance")),
        IntegrityError("INSERT", None, psycopg.errors.UniqueViolation("duplicate key")),
        ValueError("a bug"),
    ],
    ids=["sqlite-missing-table", "unique", "bug"],
)
def test_faults_of_the_request_or_the_code_are_not(error: BaseException) -> None:
    assert not is_transient(error)


def test_a_transient_failure_is_retried_and_the_last_one_raised(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise DisconnectionError("gone")
        return "done"

    with caplog.at_level(logging.WARNING):
        assert retry_transient(flaky, what="flaky", first=0, longest=0) == "done"
    assert len(calls) == 3
    assert sum("flaky: the database failed" in r.getMessage() for r in caplog.records) == 2

    def always() -> None:
        raise DisconnectionError("still gone")

    with pytest.raises(DisconnectionError):
        retry_transient(always, what="always", attempts=3, first=0, longest=0)


def test_any_other_error_is_raised_at_once() -> None:
    calls: list[int] = []

    def broken() -> None:
        calls.append(1)
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        retry_transient(broken, what="broken", first=0, longest=0)
    assert calls == [1]


def test_a_transient_failure_is_one_line_and_a_bug_keeps_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log = logging.getLogger("test.transient")
    with caplog.at_level(logging.WARNING):
        log_failure(log, DisconnectionError("gone"), "round %d failed", 1)
        log_failure(log, ValueError("a bug"), "round %d failed", 2)
    quiet, loud = caplog.records
    assert (quiet.levelno, quiet.exc_info) == (logging.WARNING, None)
    assert quiet.getMessage() == "round 1 failed (the database: DisconnectionError: gone)"
    assert loud.levelno == logging.ERROR and loud.exc_info is not None


@given(failures=st.integers(min_value=0, max_value=200))
def test_the_loop_pause_grows_to_its_bound_and_starts_over_after_a_success(failures: int) -> None:
    backoff = Backoff(first=0.05, longest=2.0)
    pauses = [backoff.next() for _ in range(failures + 1)]
    assert pauses[0] == 0.05
    assert all(a <= b <= 2.0 for a, b in itertools.pairwise(pauses))
    backoff.reset()
    assert backoff.next() == 0.05
