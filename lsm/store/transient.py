"""Transient database errors: recognised in one place, retried with back-off, logged in one line.

Why: a PostgreSQL server that restarts, fails over, or ends a backend (``pg_terminate_backend``,
an idle timeout, a proxy) breaks every connection in use at that moment; a deadlock victim and
SQLite's "database is locked" past its wait are the same kind of failure: nothing was wrong
with the request, it only met the database at a bad moment. Every long-lived path (the compile
worker, the deploy agents, the scheduler, the webhook sender, the API) must get through it
without losing a slot, a lease or a claim, and without filling its log with tracebacks of what
is an operational event, not a bug.

* ``is_transient(error)``: the one definition of such an error. The pool is already invalidated
  by SQLAlchemy when the error was a disconnect, so the next transaction runs on a fresh
  connection (``lsm.store.database`` also replaces a closed pooled one at checkout).
* ``caused_by_transient(error)``: ``error`` or any error it was raised from or while handling
  (``__cause__``, ``__context__``). Where an error is about to be recorded as a compile's own
  failure (a model, selector or export error), this is the test: a wrapper such as a
  ``SelectorError`` around a lost connection is still the database's moment, and the compile
  goes back to the queue instead of failing (a failed exporting compile fails its instances).
* ``retry_transient(fn, what=...)``: runs ``fn`` again after a short, growing pause (tenacity),
  for work that is safe to repeat: a lease renewal, a claim given back, a fenced finish. It
  never retries anything else, and after its bound it raises the last error.
* ``Backoff``: the pause a loop takes after a failed round, growing while failures repeat.
* ``log_failure``: a transient error as a one-line warning, anything else with its traceback.

What it must not do: retry a transaction whose commit may have landed unless the work is
idempotent. Callers choose what to wrap; the API answers a 503 with ``Retry-After`` instead
(``lsm.api.errors``), and the client decides.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import TypeVar

import tenacity
from sqlalchemy import exc as sa_exc

T = TypeVar("T")

#: seconds a client is told to wait before trying again (the ``Retry-After`` of a 503)
RETRY_AFTER_S = 1

#: ``retry_transient``: tries in all, the first pause, and the longest
ATTEMPTS = 6
FIRST_PAUSE_S = 0.05
LONGEST_PAUSE_S = 2.0

_SQLITE_BUSY = ("database is locked", "database is busy", "database table is locked")


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is the database's moment (connection lost, server going away or not yet
    back, deadlock victim, lock wait given up, no free pooled connection in time), not a fault
    of the statement or the data."""
    if isinstance(error, sa_exc.DisconnectionError):
        return True
    if isinstance(error, sa_exc.TimeoutError):
        # the pool had no free connection within its timeout (``lsm.store.pools``): the
        # process is at its ceiling for a moment, the request itself is fine
        return True
    if isinstance(error, sa_exc.DBAPIError):
        if error.connection_invalidated:
            return True
        if isinstance(error, sa_exc.OperationalError | sa_exc.InterfaceError):
            return _transient_driver_error(error.orig)
        return False
    return _transient_driver_error(error)


def caused_by_transient(error: BaseException) -> bool:
    """Whether ``error``, or any error in the chain it was raised from or while handling, is
    transient (``is_transient``)."""
    return _transient_in(error) is not None


def _transient_in(error: BaseException) -> BaseException | None:
    """The first transient error in ``error``'s chain (itself first), if any."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if is_transient(current):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _transient_driver_error(error: BaseException | None) -> bool:
    if isinstance(error, sqlite3.OperationalError):
        # SQLite reports a missing table or a syntax error as an OperationalError as well
        return any(text in str(error) for text in _SQLITE_BUSY)
    try:
        import psycopg
    except ImportError:  # the postgres extra is not installed: no psycopg error can occur
        return False
    # psycopg's OperationalError covers connection failures, AdminShutdown, deadlocks and
    # serialization failures (TransactionRollbackError), lock and statement timeouts
    return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)


def describe(error: BaseException) -> str:
    """A one-line account of a database error for a log line (the driver's first line)."""
    orig = getattr(error, "orig", None) or error
    first = (str(orig).strip().splitlines() or [""])[0]
    return f"{type(orig).__name__}: {first}" if first else type(orig).__name__


def log_failure(logger: logging.Logger, error: BaseException, message: str, *args: object) -> None:
    """Log ``message`` for ``error``: a warning naming the cause when it is caused by a transient
    error (it is retried, nothing is lost), an error with the traceback otherwise (a bug to look at)."""
    cause = _transient_in(error)
    if cause is not None:
        logger.warning(message + " (the database: %s)", *args, describe(cause))
    else:
        logger.exception(message, *args, exc_info=error)


def retry_transient(
    fn: Callable[[], T],
    *,
    what: str,
    logger: logging.Logger | None = None,
    attempts: int = ATTEMPTS,
    first: float = FIRST_PAUSE_S,
    longest: float = LONGEST_PAUSE_S,
) -> T:
    """``fn()``, tried again after a growing pause while it fails with a transient error (at
    most ``attempts`` tries); any other error, or the last transient one, is raised."""
    log = logger or logging.getLogger(__name__)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None and state.next_action is not None
        error = state.outcome.exception()
        assert error is not None
        log.warning(
            "%s: the database failed (%s); try %d of %d in %.2f s",
            what,
            describe(error),
            state.attempt_number + 1,
            attempts,
            state.next_action.sleep,
        )

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=first, max=longest) + tenacity.wait_random(0, first),
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(fn)


class Backoff:
    """The pause after a failed round of a loop: ``first`` doubled per failure in a row, at most
    ``longest``; ``reset()`` after a round that went through."""

    def __init__(self, first: float = FIRST_PAUSE_S, longest: float = LONGEST_PAUSE_S) -> None:
        self.first = first
        self.longest = longest
        self.failures = 0

    def next(self) -> float:
        pause = min(self.longest, self.first * 2.0**self.failures)
        self.failures = min(self.failures + 1, 32)
        return pause

    def reset(self) -> None:
        self.failures = 0


__all__ = [
    "RETRY_AFTER_S",
    "Backoff",
    "caused_by_transient",
    "describe",
    "is_transient",
    "log_failure",
    "retry_transient",
]
