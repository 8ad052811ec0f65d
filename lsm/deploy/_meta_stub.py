"""TEMPORARY stand-in for ``lsm.deploy.metaparams`` (branch ``meta``), its agreed interface only.

Delete this module when ``meta`` is merged and import ``lsm.deploy.metaparams`` instead; it is
not a competing implementation, only enough for the agent to run until then.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from lsm.model.meta import Meta, parse_sema


@dataclass(frozen=True)
class Bucket:
    tokens: float
    at: datetime


def take_token(meta: Meta, bucket: Bucket | None, now: datetime) -> tuple[bool, Bucket, float]:
    if math.isinf(meta.limit):
        return True, bucket or Bucket(0.0, now), 0.0
    if bucket is None:
        tokens = float(meta.burst)
    else:
        elapsed = max(0.0, (now - bucket.at).total_seconds())
        tokens = min(float(meta.burst), bucket.tokens + elapsed * meta.limit)
    if tokens >= 1.0:
        return True, Bucket(tokens - 1.0, now), 0.0
    return False, Bucket(tokens, now), (1.0 - tokens) / meta.limit


@dataclass(frozen=True)
class RetryDecision:
    final: bool
    next_attempt_at: datetime | None


def after_failure(meta: Meta, attempts: int, now: datetime) -> RetryDecision:
    if meta.retry != -1 and attempts > meta.retry:
        return RetryDecision(True, None)
    delay = meta.delay * (2 ** (attempts - 1) if meta.backoff else 1)
    delay = min(delay, meta.max_delay)
    return RetryDecision(False, now + timedelta(seconds=delay))


class Semaphores:
    def __init__(self, global_size: int | None = None) -> None:
        self._lock = threading.Lock()
        self._sems: dict[str, threading.BoundedSemaphore] = {}
        self._global = threading.BoundedSemaphore(global_size) if global_size else None

    def _get(self, name: str, size: int) -> threading.BoundedSemaphore:
        with self._lock:
            sem = self._sems.get(name)
            if sem is None:
                sem = self._sems[name] = threading.BoundedSemaphore(size)
            return sem

    @contextlib.contextmanager
    def _hold(self, specs: Sequence[str]) -> Iterator[None]:
        parsed = sorted(dict(parse_sema(s) for s in specs).items())
        sems = [self._get(name, size) for name, size in parsed]
        if self._global is not None:
            sems.append(self._global)
        taken: list[threading.BoundedSemaphore] = []
        try:
            for sem in sems:
                sem.acquire()
                taken.append(sem)
            yield
        finally:
            for sem in reversed(taken):
                sem.release()

    def hold(self, specs: Sequence[str]) -> contextlib.AbstractContextManager[None]:
        return self._hold(specs)
