"""``CompileQueue``: durable compile requests, claimed in batches, finished with a report.

Why rows: a compile request is committed in the same transaction as the state change that
caused it (``lsm.orchestration``), so a crash can lose neither. A worker claims requests of
one environment while it holds that environment's compile lock (``EnvironmentLocks``), so:

* requests still marked ``running`` when the lock is taken belong to a worker that died:
  they go back to ``queued`` and the queue resumes where it stood;
* a claim takes the oldest queued request and merges what may run with it: a validation
  compile always runs alone; a full compile absorbs every pending exporting request (it
  covers them all); with ``batched_partial_compiles`` every pending partial request merges
  into one compile over the union of their ids. Merged requests point to the leader
  (``merged_into``) and end with its status and version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from lsm.inventory.database import Database
from lsm.inventory.tables import CompileRow, utcnow

EXPORTING = ("full", "partial")


@dataclass
class Batch:
    """A claimed leader and the requests merged into it."""

    leader: CompileRow
    merged: list[CompileRow] = field(default_factory=list)

    @property
    def rows(self) -> list[CompileRow]:
        return [self.leader, *self.merged]

    @property
    def kind(self) -> str:
        return self.leader.kind

    def requested_ids(self) -> list[str]:
        return list(dict.fromkeys(i for row in self.rows for i in row.requested_ids))

    def service_entities(self) -> list[str]:
        return list(dict.fromkeys(e for row in self.rows for e in row.service_entities))

    def exclude(self) -> set[str]:
        """Ids excluded by every request of the batch (one request's exclusion can't hide another's id)."""
        sets = [set(row.exclude) for row in self.rows]
        return set.intersection(*sets) if sets else set()


class CompileQueue:
    def __init__(self, db: Database) -> None:
        self.db = db

    def pending_environments(self) -> list[str]:
        with self.db.read() as session:
            # "running" too: a request left running by a dead worker is resumed by the next claim
            query = (
                select(CompileRow.env_id).where(col(CompileRow.status).in_(["queued", "running"])).distinct()
            )
            return list(session.exec(query))

    def claim(self, env_id: str, *, batched: bool, backoff: float = 0.0) -> Batch | None:
        """Claim the next batch of ``env_id`` (call with the environment's compile lock held)."""
        with self.db.write() as session:
            session.execute(
                update(CompileRow)
                .where(col(CompileRow.env_id) == env_id, col(CompileRow.status) == "running")
                .values(status="queued", merged_into=None, started_at=None)
            )
            query = (
                select(CompileRow)
                .where(CompileRow.env_id == env_id, CompileRow.status == "queued")
                .order_by(col(CompileRow.created_at).asc(), col(CompileRow.id).asc())
            )
            if not self.db.is_sqlite:
                query = query.with_for_update(skip_locked=True)
            queued = list(session.exec(query))
            if not queued:
                return None
            leader = queued[0]
            merged: list[CompileRow] = []
            if leader.kind != "validation" and _too_recent(leader, backoff):
                # exporting requests wait out the back-off to gather more; validations never wait
                waiting = next((r for r in queued if r.kind == "validation"), None)
                if waiting is None:
                    return None
                leader = waiting
            elif leader.kind == "full" or (
                leader.kind == "partial" and any(r.kind == "full" for r in queued)
            ):
                full = next(r for r in queued if r.kind == "full")
                leader = full
                merged = [r for r in queued if r.kind in EXPORTING and r is not full]
            elif leader.kind == "partial" and batched:
                merged = [r for r in queued[1:] if r.kind == "partial"]
            now = utcnow()
            leader.status, leader.started_at = "running", now
            session.add(leader)
            for row in merged:
                row.status, row.started_at, row.merged_into = "running", now, leader.id
                session.add(row)
            session.flush()
            return Batch(leader=leader, merged=merged)

    def finish(
        self,
        batch: Batch,
        *,
        status: str,
        report: dict[str, Any],
        desired_state_version: int | None = None,
        session: Session | None = None,
    ) -> None:
        """Record the outcome on every request of the batch (in ``session`` when given)."""
        if session is None:
            with self.db.write() as own:
                self.finish(
                    batch,
                    status=status,
                    report=report,
                    desired_state_version=desired_state_version,
                    session=own,
                )
            return
        now = utcnow()
        for row in batch.rows:
            fresh = session.get(CompileRow, row.id)
            if fresh is None:
                continue
            fresh.status = status
            fresh.finished_at = now
            fresh.desired_state_version = desired_state_version
            if row is batch.leader:
                fresh.report = {**fresh.report, **report}
            else:
                fresh.report = {**fresh.report, "merged_into": batch.leader.id, "status": status}
            session.add(fresh)


def _too_recent(row: CompileRow, backoff: float) -> bool:
    return backoff > 0 and _as_utc(row.created_at) > utcnow() - timedelta(seconds=backoff)


def _as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were written in UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
