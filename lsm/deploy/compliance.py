"""Compliance reports on the agents: is each selected resource's target still as desired?

Why on the agents and not in the API process: a handler reads its target from where its agent
runs (files on that host, interfaces in its namespaces), a report over 100,000 resources takes
far longer than a request should, and an API process must never run handler code for that long.
So ``POST /api/v1/compliance`` only stores a report with one part per agent name
(``lsm.store.compliance.reports``); ``ComplianceRuns``, a work source of the agent's service
loop, claims a part, and ``ComplianceWork`` checks its resources:

* each resource is built and read exactly as a dry run does (``lsm.deploy.dryrun.dry_run_resource``:
  ``pre``, the handler's ``deploy(dry_run=True)``, which calls only ``read`` and ``diff``, then
  ``post``), so the differences are the ones a deploy would act on; nothing is written to the
  target, to the resource's deploy state or to its action log;
* a part runs its resources ``threads`` at a time (bounded concurrency), in slices; each slice's
  rows are written in one transaction, fenced: only while this process still holds the part;
* a part whose process died (presence lease expired, or gone from this host) is claimed again
  by another agent process, which drops the dead one's rows first; on shutdown a running part
  is given back (queued again).

What a report must not do: repair, schedule, or count as a deploy. It is a read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from lsm.deploy.dryrun import dry_run_resource
from lsm.deploy.jail import Jail
from lsm.deploy.registry import HandlerRegistry
from lsm.desired_state.records import decode_record
from lsm.schemas.compliance import ComplianceOutcome
from lsm.schemas.deploy import ActionKind, DryRunItem
from lsm.store.compliance import reports
from lsm.store.compliance.reports import ClaimedPart
from lsm.store.database import Database
from lsm.store.deploy import claiming as deploy_claiming
from lsm.store.deploy.scope import selected_of_agent
from lsm.store.transient import log_failure

log = logging.getLogger(__name__)

#: resources read and written per slice of a part (one write transaction each)
SLICE = 500

#: a resource id that the desired state no longer holds (removed since it was planned)
GONE = "the resource left the desired state before it was checked"


def outcome_of(item: DryRunItem) -> ComplianceOutcome:
    """What a read-only run says of the target: the deploy's action, named for a report."""
    if item.error is not None or item.action == ActionKind.ERROR:
        return ComplianceOutcome.ERROR
    if item.action == ActionKind.CREATE:
        return ComplianceOutcome.MISSING
    if item.action in (ActionKind.UPDATE, ActionKind.DELETE):
        return ComplianceOutcome.DRIFTED
    return ComplianceOutcome.IN_SYNC


class ComplianceChecker:
    """Checks resources read-only with the environment's handlers; shared by every part."""

    def __init__(self, *, threads: int, state_dir: Path, jail: Jail | None) -> None:
        self.threads = max(1, threads)
        self.state_dir = state_dir
        self.jail = jail

    def check(
        self,
        registry: HandlerRegistry,
        rows: Sequence[tuple[str, str, str]],
        records: dict[str, tuple[str, str]],
    ) -> list[dict[str, Any]]:
        """One item row per resource of ``rows`` (``(id, type, set)``), at most ``threads`` at once."""

        def one(row: tuple[str, str, str]) -> dict[str, Any]:
            resource_id, resource_type, set_name = row
            stored = records.get(resource_id)
            if stored is None:
                item = DryRunItem(id=resource_id, action=ActionKind.ERROR, error=GONE)
            else:
                record = decode_record(resource_id, stored[0], stored[1])
                item, _ctx = dry_run_resource(registry, record, self.state_dir, self.jail)
            return {
                "resource_id": resource_id,
                "resource_type": resource_type,
                "set_name": set_name,
                "outcome": outcome_of(item).value,
                "changes": {k: c.model_dump(mode="json") for k, c in item.changes.items()},
                "error": item.error,
            }

        if self.threads == 1 or len(rows) < 2:
            return [one(row) for row in rows]
        # slices per thread, not a task per resource: a null read costs less than a task
        size = max(1, -(-len(rows) // self.threads))
        parts = [rows[i : i + size] for i in range(0, len(rows), size)]
        with ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="lsm-compliance") as pool:
            done = list(pool.map(lambda part: [one(r) for r in part], parts))
        return [row for part in done for row in part]


class ComplianceWork:
    """One claimed part of a report, run as work of the service loop."""

    def __init__(self, runs: ComplianceRuns, part: ClaimedPart) -> None:
        self.runs = runs
        self.part = part
        self.label = f"compliance report {part.report_id} agent {part.agent} ({part.total} resource(s))"

    def deadline(self) -> float | None:
        return None  # a part's rows are written slice by slice; a dead process's part is claimed again

    def expire(self) -> None:
        pass

    def run(self) -> None:
        try:
            self.runs.run(self.part)
        finally:
            self.runs.done(self)


class ComplianceRuns:
    """The compliance work source of an agent process (``lsm.services.loop.WorkSource``)."""

    name = "compliance"

    def __init__(
        self,
        db: Database,
        registry: Callable[[str], HandlerRegistry],
        checker: ComplianceChecker,
        *,
        owner: str,
        dead: Callable[[Collection[str], datetime], set[str]],
        agents: Collection[str] | None,
        clock: Callable[[], datetime],
        stopped: Callable[[], bool],
    ) -> None:
        self.db = db
        self.registry = registry
        self.checker = checker
        self.owner = owner
        self.dead = dead
        self.agents = set(agents) if agents else None
        self.clock = clock
        self.stopped = stopped
        self._running: set[ComplianceWork] = set()
        self._lock = threading.Lock()

    # -- WorkSource ----------------------------------------------------------------------------------
    def claim(self) -> ComplianceWork | None:
        if self.stopped():
            return None
        now = self.clock()
        with self.db.read() as session:
            candidates = reports.open_parts(session.connection(), self.agents)
        if not candidates:
            return None
        owners = {p["owner"] for p in candidates if p["owner"] and p["owner"] != self.owner}
        gone = self.dead(owners, now) if owners else set()
        for candidate in candidates:
            if candidate["status"] == "running" and candidate["owner"] not in gone:
                continue  # a live process runs it (this one included)
            with self.db.write() as session:
                part = reports.take_part(session.connection(), candidate, self.owner, now)
            if part is not None:
                if candidate["owner"]:
                    log.info(
                        "compliance report %s agent %s: taken over from %s",
                        part.report_id,
                        part.agent,
                        candidate["owner"],
                    )
                work = ComplianceWork(self, part)
                with self._lock:
                    self._running.add(work)
                return work
        return None

    def heartbeat(self, running: Sequence[Any]) -> None:
        """A part is held while this process's presence lease lives (renewed by the keepalive)."""

    def release(self, running: Sequence[Any]) -> None:
        """Shutdown with parts still running: each is queued again for another process."""
        for work in running:
            if isinstance(work, ComplianceWork):
                try:
                    with self.db.write() as session:
                        reports.give_back(session.connection(), work.part, self.owner)
                except Exception as exc:
                    log_failure(
                        log, exc, "compliance report %s: could not give back a part", work.part.report_id
                    )

    def done(self, work: ComplianceWork) -> None:
        with self._lock:
            self._running.discard(work)

    # -- the work ------------------------------------------------------------------------------------
    def run(self, part: ClaimedPart) -> None:
        """Check every selected resource of the part's agent, slice by slice; a failure of the
        part as a whole (its environment's model can not be loaded) fails the report with why."""
        try:
            registry = self.registry(part.env_id)
            with self.db.read() as session:
                rows = selected_of_agent(session.connection(), part.env_id, part.selection, part.agent)
            for start in range(0, len(rows), SLICE):
                if self.stopped():
                    return  # ``release`` gives the part back
                chunk = rows[start : start + SLICE]
                with self.db.read() as session:
                    records = deploy_claiming.stored_records(
                        session.connection(), part.env_id, [r[0] for r in chunk]
                    )
                items = self.checker.check(registry, chunk, records)
                with self.db.write() as session:
                    if not reports.write_items(session.connection(), part, self.owner, items):
                        log.info("compliance report %s agent %s: lost the part", part.report_id, part.agent)
                        return
            with self.db.write() as session:
                reports.finish_part(session.connection(), part, self.owner, self.clock())
        except Exception as exc:
            log_failure(log, exc, "compliance report %s agent %s failed", part.report_id, part.agent)
            message = f"agent {part.agent}: {type(exc).__name__}: {exc}"
            try:
                with self.db.write() as session:
                    reports.finish_part(session.connection(), part, self.owner, self.clock(), error=message)
            except Exception as again:
                log_failure(log, again, "compliance report %s: could not record its failure", part.report_id)

    def running(self) -> int:
        with self._lock:
            return len(self._running)


__all__ = ["SLICE", "ComplianceChecker", "ComplianceRuns", "ComplianceWork", "outcome_of"]
