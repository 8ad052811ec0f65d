"""Holding back feed items that a transaction still committing could come before (PostgreSQL).

Why: the change feed (``lsm.facade.events``) moves a cursor per kind, and a cursor only moves
forward. On PostgreSQL a row's position is fixed before its transaction commits: an event-log
or action-log id is taken at the insert, a compile's ``finished_at`` just before its commit.
Two writers can commit in the other order, so a read can see position 101 while 100 is still
on its way; sent 101, the stream's cursor passes 100 and 100 is never sent. (SQLite commits
one writer at a time, positions are taken inside the write lock: nothing to hold there.)

So a read on PostgreSQL keeps each kind to the prefix that can not be preceded any more:

* event and action lines (ids from one sequence per table): up to the first id this snapshot
  does not see, whatever its environment. An id that stays unseen for ``settle`` seconds is
  taken for a rolled-back insert (or a jump of the sequence) and passed: a writer takes its ids
  at the end of its transaction and commits right after, far within that;
* compile completions: those that finished before the oldest compile still running in the
  environment started (whatever finishes later has a later ``finished_at``); a completion
  held for ``settle`` seconds is sent (a compile's ``finished_at`` is taken just before its
  commit).

In the usual case nothing is held: ids come without gaps and no compile is running when a
completion is read. A ``Holdback`` is kept by one reader (a stream) across its reads: it
remembers since when it has been waiting for what.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from lsm.store.batches import aware

T = TypeVar("T")

#: seconds an unseen position is waited for before it is taken as never coming
SETTLE_S = 2.0
#: waits remembered at most (older ones are forgotten first)
_MEMORY = 1000


@dataclass
class Holdback:
    """What one reader holds back, and since when (``clock`` seconds)."""

    settle: float = SETTLE_S
    clock: Callable[[], float] = time.monotonic
    _since: dict[tuple[str, object], float] = field(default_factory=dict)

    def before_gaps(
        self, kind: str, rows: Sequence[T], id_of: Callable[[T], int], gaps: Sequence[int]
    ) -> list[T]:
        """``rows`` (in id order) before the first of ``gaps`` (the first ids of runs of ids not
        seen, in order) that is not given up on yet."""
        for start in gaps:
            if not self._waited(kind, start):
                return [row for row in rows if id_of(row) < start]
        return list(rows)

    def finished_before(
        self,
        rows: Sequence[T],
        finished_at: Callable[[T], datetime],
        key: Callable[[T], object],
        running_since: datetime | None,
    ) -> list[T]:
        """The prefix of ``rows`` (in finishing order) that no running compile can precede."""
        if running_since is None:
            return list(rows)
        out: list[T] = []
        for row in rows:
            if aware(finished_at(row)) >= aware(running_since) and not self._waited("compile", key(row)):
                break
            out.append(row)
        return out

    def _waited(self, kind: str, what: object) -> bool:
        """Whether ``what`` has been waited for ``settle`` seconds (the first ask starts the wait)."""
        now = self.clock()
        since = self._since.setdefault((kind, what), now)
        if len(self._since) > _MEMORY:
            for stale in list(self._since)[: len(self._since) - _MEMORY]:
                del self._since[stale]
        return now - since >= self.settle


def gap_starts(after: int, seen: Sequence[int]) -> list[int]:
    """The first ids of the runs of ids after ``after`` that are missing from ``seen`` (ascending)."""
    gaps: list[int] = []
    expected = after + 1
    for found in seen:
        if found > expected:
            gaps.append(expected)
        expected = found + 1
    return gaps
