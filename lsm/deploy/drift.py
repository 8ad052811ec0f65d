"""``DriftQueue``: watch events -> resources checked again, collated, never dropped.

Why a queue of ids and one writer thread: a watch may fire hundreds of events a second (an
editor saving, a script rewriting a file in a loop), on the watch's own thread, which must not
wait for the database. Events only add the resource id to a set; one thread turns the set into
one write transaction (``lsm.store.deploy.watch.mark_drifted``) that sets those rows back to
``pending``, then wakes the claim. Events that arrive meanwhile are the same id again: a storm
is one write and one check. The deploy path does the rest under the metaparameters: a token
bucket without a token keeps the row ``pending`` until the next token is due, so the check
runs then and reads the target as the *last* event left it (the replay).

An event for a resource that is ``deploying`` is kept: the run may have read before the event,
so the id is marked again once the row is no longer ``deploying`` (``flush``, called when a
batch finished, and a short retry meanwhile). That is how the last event is never dropped, at
the price of one more check after a deploy that wrote the file itself.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Callable

from lsm.store.database import Database
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import watch as deploy_watch
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

#: how long events are collated before they are written (seconds)
COLLATE = 0.02
#: how soon ids held back by a running deploy (or a failed write) are tried again (seconds)
RETRY = 0.25


class DriftQueue:
    """Collates drift events per environment and marks the resources for a check."""

    def __init__(self, db: Database, wake: Callable[[str | None], None]) -> None:
        self.db = db
        #: called with the environment after rows were set to pending (the loop's ``wake``)
        self.wake = wake
        self._cond = threading.Condition()
        self._new: dict[str, set[str]] = defaultdict(set)
        self._held: dict[str, set[str]] = defaultdict(set)
        self._stopped = False
        self._flush_now = False
        self._thread: threading.Thread | None = None
        #: how many check marks were written (for tests and benchmarks: one per collated storm)
        self.marked = 0

    def drifted(self, env_id: str, resource_id: str) -> None:
        """A watch saw ``resource_id`` change: check it. Cheap; any thread."""
        with self._cond:
            if self._stopped:
                return
            self._new[env_id].add(resource_id)
            self._start()
            self._cond.notify()

    def flush(self) -> None:
        """Try the held-back ids now (a batch finished: their rows may no longer be deploying)."""
        with self._cond:
            if self._held:
                self._flush_now = True
                self._cond.notify()

    def pending(self) -> int:
        """Ids waiting to be written or held back."""
        with self._cond:
            return sum(map(len, self._new.values())) + sum(map(len, self._held.values()))

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    # -- the writer thread ----------------------------------------------------------------------
    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="lsm-drift", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and not self._new and not (self._held and self._flush_now):
                    timed_out = not self._cond.wait(RETRY if self._held else None)
                    if timed_out and self._held:
                        break
                if self._stopped:
                    return
                self._flush_now = False
                if self._new:
                    self._cond.wait(COLLATE)  # collate: the events of one burst land in one write
                    if self._stopped:
                        return
                batch: dict[str, set[str]] = defaultdict(set)
                for source in (self._new, self._held):
                    for env_id, ids in source.items():
                        batch[env_id] |= ids
                self._new.clear()
                self._held.clear()
            for env_id, ids in sorted(batch.items()):
                self._mark(env_id, ids)

    def _mark(self, env_id: str, ids: set[str]) -> None:
        def transaction() -> deploy_watch.Marked:
            with self.db.write() as session:
                return deploy_watch.mark_drifted(session.connection(), env_id, ids)

        try:
            marked = deploy_claims.retry_conflicts(transaction, f"drift marks of environment {env_id}")
        except Exception as exc:
            log_failure(log, exc, "environment %s: drift of %d resource(s) not marked yet", env_id, len(ids))
            with self._cond:
                self._held[env_id] |= ids
            return
        with self._cond:
            if marked.running:
                self._held[env_id].update(marked.running)
            self.marked += len(marked.checked)
        if marked.checked:
            self.wake(env_id)


__all__ = ["DriftQueue"]
