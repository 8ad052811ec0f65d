"""``Watches``: the watches of an agent process: started when a resource is deployed, stopped when
it leaves, moved with its agent name, retried under ``retry``/``delay`` when they fail.

Why the engine owns them and not the handler: the rules are the same for every handler that can
watch (``Handler.watch``, docs/handlers.md): a watch only says "this resource may have drifted"
(``WatchContext.drifted``), and the check and repair go through the normal deploy path
(``lsm.deploy.drift``: the row goes back to ``pending``), so noop reports instead of repairing,
limit/burst collate a storm of events and replay the last, and the action log shows it all.

* **Start.** When a batch wrote its results, every resource that is ``deployed`` (or whose
  drift noop reported) and whose handler watches is watched, unless its ``poll`` is above zero
  (then the poll checks it, as in the mgmt seed). A new desired hash restarts the watch.
* **Stop.** The heartbeat (``keep``) compares the watches with the rows of the names this
  process holds, when those names or an environment's planned version changed (and once a
  minute): a resource that left the desired state, or whose name went to another process, is
  no longer watched here.
* **Move.** The same comparison starts the watches of deployed resources of names this process
  holds but did not deploy (after a restart, or a take-over); names with deployed resources
  that no live process holds are looked for every ``TAKE_EVERY`` seconds and taken
  (``AgentNames.take``), and a process keeps its watched names while they are idle
  (``AgentNames.keep(watched=...)``).
* **Failure.** A watch that raises when it starts, or reports ``failed(exc)`` later, is stopped
  and started again after ``delay`` (with back-off when asked), ``retry`` times (``-1``: for
  ever), counted apart from the deploy's tries; spent, the resource is left to ``poll`` and the
  repair run (logged). A watch that starts again after a failure asks for one check (it may
  have missed events). Nothing of it ever stops the agent: it runs on a thread of its own.
"""

from __future__ import annotations

import heapq
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from lsm.deploy.batches import BatchRunner
from lsm.deploy.drift import DriftQueue
from lsm.deploy.file_watch import FileWatcher
from lsm.deploy.handler import WatchContext, call, watches
from lsm.deploy.materialize import materialize
from lsm.deploy.metaparams import after_failure
from lsm.deploy.names import AgentNames, Name, by_environment
from lsm.model.meta import DEFAULT_META, Meta, meta_of
from lsm.store.database import Database
from lsm.store.deploy import names as deploy_names
from lsm.store.deploy import watch as deploy_watch
from lsm.store.deploy.claiming import stored_records
from lsm.store.deploy.results import Result
from lsm.store.deploy.tables import resource_type_of
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (env_id, resource_id)

#: the longest the watches go without being compared with the rows (seconds)
FULL_EVERY = 60.0
#: how often the names with deployed rows that no live process holds are looked for (seconds):
#: a dead holder's lease lasts ``lease_ttl`` anyway, and the look reads the deployed rows
TAKE_EVERY = 15.0


@dataclass(eq=False)
class _Watch:
    env_id: str
    resource_id: str
    agent: str
    desired_hash: str
    meta: Meta = DEFAULT_META
    generation: int = 0
    stop: Callable[[], None] | None = None
    #: True while the handler's watch runs (False: not watchable, poll > 0, failed, given up)
    active: bool = False
    failures: int = 0
    given_up: bool = False
    record: tuple[str, str] | None = None


class Watches:
    """The watches of one agent process (thread-safe; one thread starts and stops them)."""

    def __init__(
        self,
        db: Database,
        runner: BatchRunner,
        names: AgentNames,
        drift: DriftQueue,
        *,
        clock: Callable[[], datetime],
    ) -> None:
        self.db = db
        self.runner = runner
        self.names = names
        self.drift = drift
        self.clock = clock
        #: the agent's one inotify instance, shared by every watch (``WatchContext.files``)
        self.files = FileWatcher()
        self._lock = threading.Condition()
        self._watches: dict[Key, _Watch] = {}
        self._tasks: deque[Callable[[], None]] = deque()
        self._timers: list[tuple[float, int, Key, int]] = []
        self._counter = 0
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._seen: tuple[frozenset[Name], dict[str, int]] | None = None
        self._full_at = 0.0
        self._take_at = -TAKE_EVERY

    # -- what the agent calls ---------------------------------------------------------------------
    def deployed(self, env_id: str, results: Sequence[Result], records: dict[str, tuple[str, str]]) -> None:
        """A batch wrote these results: watch what is now deployed (on the watch thread)."""
        items = [
            (r.resource_id, r.agent, r.ran_hash, records[r.resource_id])
            for r in results
            if r.status in deploy_watch.WATCHED and r.resource_id in records
        ]
        if items:
            self._submit(lambda: self._ensure(env_id, items))

    def keep(self) -> None:
        """The heartbeat: compare the watches with the rows when something moved (module doc)."""
        self._submit(self._reconcile)

    def names_watched(self) -> set[Name]:
        """The agent names whose resources this process watches now."""
        with self._lock:
            return {(w.env_id, w.agent) for w in self._watches.values() if w.active}

    def active(self) -> int:
        """How many watches run now."""
        with self._lock:
            return sum(1 for w in self._watches.values() if w.active)

    def stop(self) -> None:
        """Stop every watch and the threads (the agent stops)."""
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
            thread = self._thread
            running = list(self._watches.values())
            self._watches.clear()
        if thread is not None:
            thread.join(timeout=5)
        for w in running:
            self._halt(w)
        self.files.close()
        self.drift.stop()

    # -- the watch thread -------------------------------------------------------------------------
    def _submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            if self._stopped:
                return
            self._tasks.append(task)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="lsm-watch", daemon=True)
                self._thread.start()
            self._lock.notify_all()

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._stopped and not self._tasks:
                    if self._timers and self._timers[0][0] <= time.monotonic():
                        _, _, key, generation = heapq.heappop(self._timers)
                        self._tasks.append(partial(self._restart, key, generation))
                        break
                    self._lock.wait(max(0.0, self._timers[0][0] - time.monotonic()) if self._timers else None)
                if self._stopped:
                    return
                task = self._tasks.popleft()
            try:
                task()
            except Exception as exc:  # a bug of one step must not end the watches
                log_failure(log, exc, "a step of the watches failed (tried again at the next heartbeat)")
                self._seen = None

    # -- starting and stopping ----------------------------------------------------------------------
    def _ensure(self, env_id: str, items: Sequence[tuple[str, str, str, tuple[str, str]]]) -> None:
        for resource_id, agent, desired_hash, record in items:
            key = (env_id, resource_id)
            with self._lock:
                known = self._watches.get(key)
            if known is not None and known.desired_hash == desired_hash and known.agent == agent:
                continue  # watched already (or not watchable, or failing: its own clock decides)
            if known is not None:
                self._drop(key)
            self._start(_Watch(env_id, resource_id, agent, desired_hash, record=record))

    def _start(self, w: _Watch) -> None:
        key = (w.env_id, w.resource_id)
        assert w.record is not None
        try:
            attributes: dict[str, Any] = json.loads(w.record[0])
            w.meta = meta_of(attributes)
            registry, _ctx = self.runner.registry(w.env_id)
            handler = registry.handler_for(resource_type_of(w.resource_id))
        except Exception as exc:  # no handler, bad meta: the deploy reports it; nothing to watch
            log.debug("%s is not watched: %s", w.resource_id, exc)
            self._keep(key, w)
            return
        if not watches(handler) or w.meta.poll > 0:
            self._keep(key, w)  # poll > 0 checks it instead, as in the seed; or none can watch
            return
        with self._lock:
            self._counter += 1
            w.generation = self._counter
            self._watches[key] = w
        generation = w.generation
        ctx = WatchContext(
            w.resource_id,
            state_dir=self.runner.state_dir,
            jail=self.runner.jail,
            files=self.files,
            drifted=lambda: self._drifted(key, generation),
            failed=lambda exc: self._submit(lambda: self._failed(key, generation, exc)),
        )
        try:
            resource = materialize(handler, w.resource_id, attributes, tuple(json.loads(w.record[1])))
            stop = call(handler.watch, ctx, resource)
        except Exception as exc:
            self._failed(key, generation, exc)
            return
        with self._lock:
            current = self._watches.get(key) is w and w.generation == generation
            if current:
                w.stop, w.active = stop, True
                restarted, w.failures = w.failures > 0, 0
        if not current:  # dropped while it started
            if stop is not None:
                _quietly(stop)
            return
        if restarted:
            self.drift.drifted(w.env_id, w.resource_id)  # it may have missed events while down

    def _keep(self, key: Key, w: _Watch) -> None:
        with self._lock:
            self._watches[key] = w

    def _drifted(self, key: Key, generation: int) -> None:
        with self._lock:
            w = self._watches.get(key)
            if w is None or w.generation != generation or not w.active:
                return
        self.drift.drifted(key[0], key[1])

    def _failed(self, key: Key, generation: int, exc: BaseException) -> None:
        with self._lock:
            w = self._watches.get(key)
            if w is None or w.generation != generation:
                return
        self._halt(w)
        w.failures += 1
        decision = after_failure(w.meta, w.failures, self.clock())
        if decision.final or decision.next_attempt_at is None:
            w.given_up = True
            log.error(
                "the watch of %s failed %d time(s) and is given up (poll and the repair run still "
                "check it): %s: %s",
                w.resource_id,
                w.failures,
                type(exc).__name__,
                exc,
            )
            return
        wait = max(0.0, (decision.next_attempt_at - self.clock()).total_seconds())
        log.warning(
            "the watch of %s failed (failure %d), started again in %.3g s: %s: %s",
            w.resource_id,
            w.failures,
            wait,
            type(exc).__name__,
            exc,
        )
        with self._lock:
            heapq.heappush(self._timers, (time.monotonic() + wait, id(w), key, generation))
            self._lock.notify_all()

    def _restart(self, key: Key, generation: int) -> None:
        with self._lock:
            w = self._watches.get(key)
            if w is None or w.generation != generation or w.given_up:
                return
        self._start(w)

    def _halt(self, w: _Watch) -> None:
        with self._lock:
            stop, w.stop, w.active = w.stop, None, False
        if stop is not None:
            _quietly(stop)

    def _drop(self, key: Key) -> None:
        with self._lock:
            w = self._watches.pop(key, None)
        if w is not None:
            self._halt(w)

    # -- the comparison with the rows -------------------------------------------------------------
    def _reconcile(self) -> None:
        now, mono = self.clock(), time.monotonic()
        free: set[Name] = set()
        with self.db.read() as session:
            conn = session.connection()
            heads = deploy_names.planned_versions(conn)
            if mono - self._take_at >= TAKE_EVERY:
                self._take_at = mono
                wanted: set[Name] = set()
                for env_id in heads:
                    wanted |= deploy_watch.watched_names(conn, env_id)
                free = deploy_watch.unheld(conn, wanted - self.names.snapshot(), now)
        if free:
            self.names.take(free)
        held = frozenset(self.names.snapshot())
        if self._seen == (held, heads) and mono - self._full_at < FULL_EVERY:
            return
        self._seen, self._full_at = (held, heads), mono
        mine = by_environment(held)
        with self._lock:
            ours = list(self._watches.items())
        gone = [key for key, w in ours if (key[0], w.agent) not in held]
        with self.db.read() as session:
            conn = session.connection()
            for env_id, agents in sorted(mine.items()):
                rows = deploy_watch.rows_of(conn, env_id, agents)
                gone += [key for key, _ in ours if key[0] == env_id and key[1] not in rows]
                with self._lock:
                    hashes = {rid: w.desired_hash for (env, rid), w in self._watches.items() if env == env_id}
                start = [
                    rid
                    for rid, (_agent, desired_hash, status) in rows.items()
                    if status in deploy_watch.WATCHED and hashes.get(rid) != desired_hash
                ]
                records = stored_records(conn, env_id, start) if start else {}
                items = [(rid, rows[rid][0], rows[rid][1], records[rid]) for rid in start if rid in records]
                if items:
                    self._submit(partial(self._ensure, env_id, items))
        for key in set(gone):
            self._drop(key)


def _quietly(stop: Callable[[], None]) -> None:
    try:
        stop()
    except Exception:  # stopping a watch that already broke: nothing left to do
        log.debug("stopping a watch failed", exc_info=True)


__all__ = ["Watches"]
