"""Group commit: concurrent write requests of one process share one transaction.

Why: under a burst, every API write used to open its own write transaction. On SQLite the
writers queue on the one write lock, and a waiter sleeps in SQLite's busy handler (up to
100 ms a nap) while the lock may already be free; on PostgreSQL each commit is a WAL flush and
a connection of its own. Here a caller hands its work (a function of an open ``Session``) to
one writer thread and waits. The writer takes everything that is queued (up to ``max_batch``)
and runs it in ONE write transaction, each item under its own SAVEPOINT:

* an item that raises one of ``item_errors`` (a refused command: 409, 404, 422, an identity
  clash caught by the unique index) rolls back only its savepoint; its caller gets that error,
  the others are unaffected;
* any other error before the commit (a bug, a lost connection, a deadlock) rolls the whole
  transaction back, and every item of the batch is then run again alone, in its own
  transaction, so that each caller gets exactly what a lone transaction would have given;
* nobody is answered before the shared commit returned: a crash before it answers nobody
  success, and what it wrote is rolled back with the transaction. An error raised by the
  commit itself is every item's answer (it is not retried: the writes may have landed).

Rows an item only inserts (event lines, compile requests) need not be written one item at a
time: an item hands them to ``defer_insert`` and they are inserted once per table after the
batch's last item, one ``executemany`` instead of one per item (a fifth of an item's time under
the write lock). Only a succeeded item's rows are kept; a refused item's are dropped with its
savepoint. Outside a group (``defer_insert`` returns False) the caller inserts them itself.

After each item the session is emptied (``expunge_all``): the next item reads the rows it
needs from the database (where the earlier items' writes are), exactly as it would in
a transaction of its own, and a rolled-back savepoint can not expire an object an earlier item
returned.

Cost: one queue hand-off per call; the transaction, connection checkout and commit are shared
by the batch. Items run one after the other, in arrival order (the GIL ran them one at a time
before as well).

Decided before the lock (optimistic). An item may come with a ``plan`` as well as its
``work``: the same command, decided on a read snapshot taken before the batch asks for the
write lock, giving the versions of the instance rows it read (its guards) and a function that
only writes what it decided (``lsm.orchestration.commit.write``). Under the lock, the versions
of every planned item's guards are read in one statement (the commit's check, for the whole
batch); an item whose rows are still at those versions, and were not written by an earlier item
of the batch, only writes (no savepoint, no read, none of its checks); any other item runs its
``work`` (decide and commit in the write transaction). Why: on SQLite the write lock is what
bounds a burst, and reading, checking and stepping an instance was most of an item's time under
it. Every change to an instance row bumps its version, so an unchanged version means the plan
read what the lock would have shown it. A refused command is not answered from a snapshot: a
plan that raises, whatever the error, sends the item down the ``work`` path, which gives the
answer.

A caller on an event loop (an API route) hands its work over with ``run_async`` instead of
blocking a thread on ``run``: it awaits its answer on the loop, and the writer answers a whole
batch's callers of one loop with ONE ``call_soon_threadsafe``. Why: a route used to lend a
thread per change only to wait in it; the hand-offs to that thread and back cost more CPU per
call than awaiting a future, and a batch's waiting threads took turns at the GIL with the event
loop and the writer.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from sqlalchemy import Table
from sqlmodel import Session

from lsm.store.database import Database

log = logging.getLogger(__name__)

T = TypeVar("T")

#: items one shared transaction holds at most: it holds the write lock while it runs them
DEFAULT_MAX_BATCH = 64

#: ``session.info`` key of the running item's deferred inserts (``defer_insert``)
_DEFERRED = "lsm_group_deferred_inserts"

_Inserts = dict[Table, list[dict[str, Any]]]


def defer_insert(session: Session, table: Table, rows: list[dict[str, Any]]) -> bool:
    """Leave ``rows`` of ``table`` for the group's batch to insert after its last item.

    True when ``session`` runs a group-commit item (the rows are inserted before the shared
    commit, and only if the item succeeds); False otherwise: the caller inserts them now.
    """
    deferred: _Inserts | None = session.info.get(_DEFERRED)
    if deferred is None:
        return False
    deferred.setdefault(table, []).extend(rows)
    return True


@dataclass
class Planned(Generic[T]):
    """An item decided on a snapshot: what it read, and how to write what it decided."""

    #: instance id -> the version it was read at; the plan holds while all are unchanged
    guards: dict[str, int]
    #: writes the decided changes into the batch's write transaction, returns the item's answer
    apply: Callable[[Session], T]


#: reads the current versions of instance rows (locking them where the backend can)
VersionReader = Callable[[Session, Collection[str]], dict[str, int]]


@dataclass
class _Item(Generic[T]):
    work: Callable[[Session], T]
    #: the same work decided on a snapshot, before the lock (see "Decided before the lock")
    plan: Callable[[Session], Planned[T]] | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None
    #: set by ``run_async``: the caller's loop and the future it awaits
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future[Any] | None = None

    def answer(self, result: Any = None, error: BaseException | None = None) -> None:
        """Record the answer; a thread caller wakes now, a loop caller when ``_wake`` runs."""
        self.result, self.error = result, error
        self.done.set()

    def settle(self) -> None:
        """In the caller's loop: hand the recorded answer to the awaited future."""
        future = self.future
        if future is None or future.done():  # the caller was cancelled: nobody listens
            return
        if self.error is not None:
            future.set_exception(self.error)
        else:
            future.set_result(self.result)


def _settle_all(items: list[_Item[Any]]) -> None:
    for item in items:
        item.settle()


def _wake(items: list[_Item[Any]]) -> None:
    """Answer the loop callers among ``items``: one call into each of their loops."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Item[Any]]] = {}
    for item in items:
        if item.loop is not None:
            by_loop.setdefault(item.loop, []).append(item)
    for loop, waiting in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle_all, waiting)
        except RuntimeError:  # the loop is closed: its callers are gone
            log.warning("group commit: %d answers for a closed event loop dropped", len(waiting))


class GroupCommit:
    """One writer thread that runs the queued work of many callers in shared transactions."""

    def __init__(
        self,
        db: Database,
        *,
        item_errors: tuple[type[BaseException], ...],
        max_batch: int = DEFAULT_MAX_BATCH,
        name: str = "lsm-group-commit",
        versions: VersionReader | None = None,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.db = db
        self.item_errors = item_errors
        self.max_batch = max_batch
        self.name = name
        #: without it, items' plans are ignored (every item runs its work under the lock)
        self.versions = versions
        self._queue: queue.SimpleQueue[_Item[Any] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: batches committed and items answered; items answered from their plan (for tests and
        #: benchmarks)
        self.batches = 0
        self.items = 0
        self.planned = 0

    def run(self, work: Callable[[Session], T], *, plan: Callable[[Session], Planned[T]] | None = None) -> T:
        """Run ``work(session)`` in a shared write transaction; its result once committed.

        Called from the writer thread itself (work that writes again), it runs in a transaction
        of its own instead of waiting for itself.
        """
        if threading.current_thread() is self._thread:
            with self.db.write(urgent=True) as session:
                return work(session)
        item: _Item[T] = _Item(work, plan)
        self._ensure_started()
        self._queue.put(item)
        item.done.wait()
        if item.error is not None:
            raise item.error
        result: T = item.result
        return result

    async def run_async(
        self, work: Callable[[Session], T], *, plan: Callable[[Session], Planned[T]] | None = None
    ) -> T:
        """``run`` for a caller on an event loop: the same transaction and answer, awaited on
        the loop instead of in a thread (see the module docstring).

        Cancelling the await does not withdraw the work: it is queued and runs, as a request
        whose client went away does; only its answer is dropped.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._ensure_started()
        self._queue.put(_Item(work, plan, loop=loop, future=future))
        return await future

    def close(self) -> None:
        """Answer what is queued, then stop the writer (later calls start a new one)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    # -- the writer ---------------------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            try:
                self._run_batch(batch)
            except BaseException as exc:  # never leave a caller waiting for ever
                for item in batch:
                    if not item.done.is_set():
                        item.answer(error=exc)
                log.exception("group commit: a batch failed outside its items")
            finally:
                _wake(batch)
            if stop:
                return

    def _run_batch(self, batch: list[_Item[Any]]) -> None:
        plans = self._plan(batch)
        outcomes: list[tuple[Any, BaseException | None]] = []
        inserts: _Inserts = {}
        committing = False
        planned = 0
        try:
            with self.db.write(urgent=True) as session:
                guards = _Guards(self.versions, session, plans)
                for item, plan in zip(batch, plans, strict=True):
                    if plan is not None and guards.hold(plan):
                        outcomes.append(self._apply_item(session, plan, inserts))
                        planned += 1
                    else:
                        outcomes.append(self._run_item(session, item, inserts))
                        guards.unsure()
                    session.expunge_all()
                connection = session.connection()
                for table, rows in inserts.items():  # in the order the items first used them
                    connection.execute(table.insert(), rows)
                committing = True
        except Exception as exc:
            if committing:  # the commit itself failed: the writes may or may not have landed
                for item in batch:
                    item.answer(error=exc)
                return
            log.warning("group commit: a batch of %d failed (%s); running its items alone", len(batch), exc)
            for item in batch:
                self._run_alone(item)
            return
        self.batches += 1
        self.items += len(batch)
        self.planned += planned
        for item, (result, error) in zip(batch, outcomes, strict=True):
            item.answer(result, error)

    def _plan(self, batch: list[_Item[Any]]) -> list[Planned[Any] | None]:
        """Decide the items that have a plan on one read snapshot, before the write lock.

        An item whose plan fails (a refusal, any error) gets None: it runs its work under the
        lock, where its answer is decided. Nothing here writes.
        """
        plans: list[Planned[Any] | None] = [None] * len(batch)
        if self.versions is None or all(item.plan is None for item in batch):
            return plans
        try:
            with self.db.read() as session:
                for i, item in enumerate(batch):
                    if item.plan is None:
                        continue
                    try:
                        plans[i] = item.plan(session)
                    except Exception as exc:  # deciding under the lock gives the answer
                        log.debug("group commit: item not planned (%s: %s)", type(exc).__name__, exc)
                    session.expunge_all()
        except Exception as exc:  # no snapshot: all run locked
            log.warning("group commit: no snapshot to decide on (%s); all decided under the lock", exc)
            return [None] * len(batch)
        return plans

    def _apply_item(self, session: Session, plan: Planned[Any], inserts: _Inserts) -> tuple[Any, None]:
        """Write a planned item's changes. No savepoint: it only writes what it decided, and an
        error here fails the batch (which then runs every item alone)."""
        mine: _Inserts = {}
        session.info[_DEFERRED] = mine
        try:
            result = plan.apply(session)
        finally:
            del session.info[_DEFERRED]
        for table, rows in mine.items():
            inserts.setdefault(table, []).extend(rows)
        return result, None

    def _run_item(
        self, session: Session, item: _Item[Any], inserts: _Inserts
    ) -> tuple[Any, BaseException | None]:
        """Run one item under its savepoint; its deferred rows join ``inserts`` if it succeeds."""
        mine: _Inserts = {}
        session.info[_DEFERRED] = mine
        try:
            with session.begin_nested():
                result = item.work(session)
        except self.item_errors as exc:
            return None, exc
        finally:
            del session.info[_DEFERRED]
        for table, rows in mine.items():
            inserts.setdefault(table, []).extend(rows)
        return result, None

    def _run_alone(self, item: _Item[Any]) -> None:
        try:
            with self.db.write(urgent=True) as session:
                result = item.work(session)
        except BaseException as exc:
            item.answer(error=exc)
        else:
            item.answer(result)


class _Guards:
    """The versions a batch's plans are checked against, under the write lock.

    Read once for every guard of the batch's plans; after an item ran its work the locked way
    (it may have written any instance) they are read again, in one statement, before the next
    plan is checked. An instance a planned item wrote is never another plan's: its version
    moved on.
    """

    def __init__(
        self, read: VersionReader | None, session: Session, plans: list[Planned[Any] | None]
    ) -> None:
        self._read = read
        self._session = session
        self._ids = {i for plan in plans if plan is not None for i in plan.guards}
        self._current: dict[str, int] | None = None
        self._written: set[str] = set()

    def hold(self, plan: Planned[Any]) -> bool:
        """Whether ``plan`` still holds; if it does, its instances count as written."""
        if self._read is None:
            return False
        if self._current is None:
            self._current = self._read(self._session, self._ids) if self._ids else {}
        current = self._current
        if any(i in self._written or current.get(i) != v for i, v in plan.guards.items()):
            return False
        self._written.update(plan.guards)
        return True

    def unsure(self) -> None:
        """An item ran its work under the lock: versions are read again before the next plan."""
        self._current = None
