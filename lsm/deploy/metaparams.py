"""Pure metaparameter primitives: the token bucket, the retry decision and the semaphores.

Why a module of its own, without I/O or a store: the deploy engine enforces ``limit``/``burst``,
``retry``/``delay``/``backoff``/``max_delay`` and ``sema`` (docs/semantics.md §5) for every
handler, and the arithmetic of those rules is where off-by-one and clock bugs hide. Kept pure
(time is always passed in as ``now``), each rule is tested exactly, with an injected clock and
Hypothesis, and the engine only stores the state these functions return (a ``Bucket`` survives
new desired-state versions because the engine stores it per resource, not per version).

Rules decided here (the engine relies on them):

* Token bucket: ``limit`` tokens per second refill a bucket of ``burst`` tokens; an action takes
  one. ``None`` is a full bucket. Time running backwards never adds tokens. A ``limit`` of
  ``inf`` always allows and leaves the state alone.
* Retry: ``attempts`` counts failures, this one included. ``retry`` is the number of tries after
  the first failure, so failure ``retry + 1`` is final; ``-1`` is never final. The wait is
  ``delay``; with ``backoff`` it is ``delay * 2**(attempts-1)``, never above ``max_delay`` (the
  cap belongs to back-off: a plain ``delay`` above ``max_delay`` is used as written).
* Nothing is scheduled after ``LATEST`` (year 9999): absurd but valid values (``delay=1e18``,
  ``limit=1e-300``) give a far date, never an ``OverflowError`` inside the engine.
* Semaphores: a holder acquires the global semaphore first, then its named ones in sorted id
  order, one total order for every holder, so two holders never wait on each other in a cycle.
  A semaphore's size is fixed while it is in use (held or waited for); asking for it with
  another size meanwhile is a ``MetaError`` naming it. Once idle it is forgotten, so a new
  version may change a size. ``sema_sizes`` finds such conflicts among the resources of one
  version deterministically, before anything runs.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lsm.model.meta import Meta, MetaError, parse_sema

__all__ = [
    "LATEST",
    "Bucket",
    "RetryDecision",
    "SemaState",
    "Semaphores",
    "after_failure",
    "retry_wait",
    "sema_sizes",
    "take_token",
]

_MICROSECOND = timedelta(microseconds=1)
#: the latest time these functions schedule: a wait past it (a ``delay`` of 1e18 s, a ``limit``
#: of 1e-300/s) is clamped to it, never an ``OverflowError`` in the engine. A year short of
#: ``datetime.max`` so that ``now + timedelta(seconds=wait)`` cannot overflow either.
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def _check_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"now must be timezone-aware (UTC), got naive {now.isoformat()}")


# --- token bucket ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """A token bucket's state: ``tokens`` as computed at ``at`` (timezone-aware UTC).

    The engine stores it in ``lsm_resource_state.bucket_tokens`` / ``bucket_at``. SQLite gives
    such a column back without its zone, so a naive ``at`` is read as UTC.
    """

    tokens: float
    at: datetime

    def __post_init__(self) -> None:
        if self.at.tzinfo is None:
            object.__setattr__(self, "at", self.at.replace(tzinfo=UTC))


def _refilled(meta: Meta, bucket: Bucket, when: datetime) -> float:
    """The tokens ``bucket`` holds at ``when`` (never fewer than it had, never above burst)."""
    elapsed = max(0.0, (when - bucket.at).total_seconds())
    return min(float(meta.burst), bucket.tokens + meta.limit * elapsed)


def take_token(meta: Meta, bucket: Bucket | None, now: datetime) -> tuple[bool, Bucket, float]:
    """Take one token of ``meta``'s bucket (``limit`` tokens/s, ``burst`` capacity) at ``now``.

    ``bucket`` is the state returned by the previous call (``None``: a full bucket). Returns
    ``(allowed, new state, wait)``; when not allowed, ``wait`` is the exact number of seconds
    (whole microseconds) after which a call with the new state is allowed (a token due after
    ``LATEST``: the wait until ``LATEST``), else ``0.0``.
    ``limit = inf`` is always allowed; the state passes through (a full bucket for ``None``).
    A finite limit with ``burst < 1`` could never act: a ``MetaError`` naming ``burst``.
    """
    _check_aware(now)
    if math.isinf(meta.limit):
        return True, bucket if bucket is not None else Bucket(float(meta.burst), now), 0.0
    if meta.burst < 1:
        raise MetaError("burst", f"a finite limit ({meta.limit}/s) needs a burst of at least 1")
    if not meta.limit > 0:
        raise MetaError("limit", f"limit {meta.limit} must be a positive rate (or inf)")
    if bucket is None:
        state = Bucket(float(meta.burst), now)
    else:
        # A clock that went back keeps the later instant: tokens are only ever valid from `at`.
        at = max(bucket.at, now)
        state = Bucket(_refilled(meta, bucket, at), at)
    if state.tokens >= 1.0:
        return True, Bucket(state.tokens - 1.0, state.at), 0.0
    # Round up to whole microseconds (datetime's resolution), then step until the same
    # arithmetic the next call uses really yields a token, so `now + wait` is always allowed.
    try:
        due = state.at + timedelta(microseconds=math.ceil((1.0 - state.tokens) / meta.limit * 1e6))
    except OverflowError:
        due = LATEST
    if due >= LATEST:
        return False, state, (LATEST - now).total_seconds()
    while _refilled(meta, state, due) < 1.0:
        due += _MICROSECOND
    return False, state, (due - now).total_seconds()


# --- retry ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryDecision:
    """What to do after a failure: give up (``final``) or try again at ``next_attempt_at``."""

    final: bool
    next_attempt_at: datetime | None


def retry_wait(meta: Meta, attempts: int) -> float:
    """Seconds to wait after failure number ``attempts`` (1-based) before the next try."""
    if attempts < 1:
        raise ValueError(f"attempts counts failures including this one: {attempts} < 1")
    if not meta.backoff or meta.delay == 0:
        return meta.delay
    doublings = attempts - 1
    if doublings > 1023:  # 2.0**1024 overflows a float; the cap was reached long before
        return meta.max_delay
    return min(meta.delay * 2.0**doublings, meta.max_delay)


def after_failure(meta: Meta, attempts: int, now: datetime) -> RetryDecision:
    """The decision after failure number ``attempts`` (this one included) at ``now``.

    ``retry`` tries follow the first failure (``-1``: for ever), so failure ``retry + 1`` is
    final. Never raises for a valid ``Meta``: a wait past ``LATEST`` is clamped to it.
    """
    _check_aware(now)
    wait = retry_wait(meta, attempts)
    if meta.retry != -1 and attempts > meta.retry:
        return RetryDecision(final=True, next_attempt_at=None)
    try:
        next_at = min(now + timedelta(seconds=wait), LATEST)
    except OverflowError:  # inf, or more days than a timedelta or a date can hold
        next_at = LATEST
    return RetryDecision(final=False, next_attempt_at=next_at)


# --- semaphores -----------------------------------------------------------------------------


def sema_sizes(spec_lists: Iterable[Sequence[str]]) -> dict[str, int]:
    """The size of every semaphore named in ``spec_lists`` (e.g. the ``sema`` of each resource
    of a version); one id with two sizes is a ``MetaError`` naming both. Deterministic, so a
    store or planner can refuse the conflict before any resource runs."""
    sizes: dict[str, int] = {}
    for specs in spec_lists:
        for spec in specs:
            name, size = parse_sema(spec)
            known = sizes.setdefault(name, size)
            if known != size:
                raise MetaError("sema", f"semaphore {name!r} is used with sizes {known} and {size}")
    return sizes


@dataclass(frozen=True)
class SemaState:
    """One semaphore as an operator sees it: its size, its holders and its waiters."""

    id: str
    size: int
    held: int
    waiting: int


@dataclass
class _Sema:
    size: int
    held: int = 0
    users: int = 0  # holders registered on it: holding it or still on their way to it
    #: made by a follower (``hold(follow=True)``): the next holder that names a size sets it
    soft: bool = False


class Semaphores:
    """Counting semaphores shared by one agent process (thread-safe).

    ``global_size`` (when set) caps how many holders are inside ``hold`` at once, whatever
    their named semaphores. ``hold`` is not reentrant: a thread that holds ``"a"`` and asks
    for ``"a"`` again waits for itself (a size-1 semaphore would never be released).
    """

    def __init__(self, global_size: int | None = None) -> None:
        if global_size is not None and global_size < 1:
            raise MetaError("sema", f"the global semaphore size must be at least 1, got {global_size}")
        self._cond = threading.Condition()
        self._named: dict[str, _Sema] = {}
        self._global = _Sema(global_size) if global_size is not None else None

    def hold(self, specs: Sequence[str], *, follow: bool = False) -> AbstractContextManager[None]:
        """Hold every semaphore of ``specs`` (``"id"``: size 1, ``"id:N"``: size N) and the
        global one, acquired in one total order (global, then ids sorted), all released on exit
        (also on error). The same spec twice counts once; one id with two sizes, or a size other
        than the one in use, is a ``MetaError`` naming the semaphore, raised before waiting.

        ``follow``: a semaphore in use is taken at the size it is in use with. For a removal,
        whose specs are an older version's: the newer version's size wins, not a clash."""
        wanted = sema_sizes([specs])
        return self._holding(sorted(wanted.items()), follow)

    @contextmanager
    def _holding(self, wanted: list[tuple[str, int]], follow: bool = False) -> Iterator[None]:
        acquired: list[_Sema] = []
        with self._cond:
            order = self._register(wanted, follow)
            try:
                for sema in order:
                    while sema.held >= sema.size:
                        self._cond.wait()
                    sema.held += 1
                    acquired.append(sema)
            except BaseException:
                self._release(acquired, wanted)
                raise
        try:
            yield
        finally:
            with self._cond:
                self._release(acquired, wanted)

    def _register(self, wanted: list[tuple[str, int]], follow: bool = False) -> list[_Sema]:
        """The semaphores to acquire, in order; checks every size before touching any state.
        A follower takes a semaphore in use as it is; a semaphore a follower made takes the
        size of the next holder that names one."""
        for name, size in wanted:
            known = self._named.get(name)
            if not follow and known is not None and not known.soft and known.size != size:
                raise MetaError(
                    "sema",
                    f"semaphore {name!r} is in use with size {known.size}; asked with size {size}",
                )
        order = []
        for name, size in wanted:
            sema = self._named.setdefault(name, _Sema(size, soft=follow))
            if not follow and sema.soft:
                sema.size, sema.soft = size, False
            order.append(sema)
        # Registered users keep a semaphore from being forgotten (and recreated, doubling its
        # capacity) while this holder still waits for an earlier one in the order.
        for sema in order:
            sema.users += 1
        return ([self._global] if self._global is not None else []) + order

    def _release(self, acquired: list[_Sema], wanted: list[tuple[str, int]]) -> None:
        for sema in acquired:
            sema.held -= 1
        for name, _ in wanted:
            sema = self._named[name]
            sema.users -= 1
            if sema.users == 0:
                del self._named[name]
        self._cond.notify_all()

    def in_use(self) -> dict[str, int]:
        """Holders per named semaphore that has any (the global one is ``global_in_use``)."""
        with self._cond:
            return {name: s.held for name, s in sorted(self._named.items()) if s.held}

    @property
    def global_in_use(self) -> int:
        """Holders inside ``hold`` counted by the global semaphore (0 when there is none)."""
        with self._cond:
            return self._global.held if self._global is not None else 0

    def state(self) -> list[SemaState]:
        """Every named semaphore in use or waited for, sorted by id."""
        with self._cond:
            return [
                SemaState(name, s.size, s.held, s.users - s.held) for name, s in sorted(self._named.items())
            ]
