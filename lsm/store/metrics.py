"""The reads of one ``/metrics`` scrape: the whole system's numbers, from the database.

Why from the database: compiles run in ``lsm worker`` processes and deploys in ``lsm agent``
processes; a process-local registry would show each process its own slice. Every process
writes what the numbers are made of into the shared database, so one scrape of any API process
answers for all of them.

What a scrape costs as the inventory grows (it must stay cheap at 100k instances):

* counters (``lsm.store.metric_counters``): a few rows per environment, kind, stage, agent
  and resource type, never the compile history or the action log;
* the compile queue: ``status IN ('queued', 'running')`` through the partial index
  ``ix_lsm_compile_active``: costs the queue's length, never the history;
* instances per entity and state: a ``GROUP BY`` over ``ix_lsm_instance_entity_state``, read
  from the index alone (deleted instances are counted in their state: an instance is deleted
  exactly when its state has the lifecycle's ``deleted`` flag, and filtering on the column
  would read every table row, far slower on a large inventory on SQLite), and
  resources per status over ``ix_lsm_resource_state_status`` (index scans: linear in the
  inventory, but no table rows read on PostgreSQL once the visibility map is set; measured by
  ``python -m benchmarks metrics``);
* compliance reports: a few counter rows, and the report parts with work left through the
  partial index ``ix_lsm_compliance_part_open`` (never the finished reports or their rows);
* desired-state heads, leases and environments: one small row each; halts and paused agents:
  a row per halt or pause.

Webhook deliveries that gave up are counted through the partial index
``ix_lsm_webhook_delivery_failed``, the retrying ones through the sender's index of pending rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, func, select, text

from lsm.store.batches import utc
from lsm.store.compliance import reports as compliance_reports
from lsm.store.deploy.leases import AGENT_PREFIX, PROCESS_PREFIX
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.desired_state.tables import ds_head
from lsm.store.environments import halts
from lsm.store.metric_counters import (
    lsm_metric_compile,
    lsm_metric_compile_stage,
    lsm_metric_deploy_action,
    lsm_metric_failed_export,
)
from lsm.store.tables import CompileRow, EnvironmentRow, InstanceRow, LeaseRow
from lsm.store.webhooks.tables import FAILED_SQL, PENDING_SQL
from lsm.store.webhooks.tables import lsm_webhook_delivery as delivery_t

#: the condition of ``ix_lsm_compile_active`` (``lsm.store.tables.CompileRow``)
ACTIVE_SQL = "status IN ('queued', 'running')"


@dataclass(frozen=True)
class QueueCount:
    env_id: str
    kind: str
    status: str
    count: int
    #: the oldest request's creation time
    oldest: datetime


@dataclass(frozen=True)
class WebhookCounts:
    """Per environment: deliveries that gave up, and pending ones that failed at least once."""

    failed: list[tuple[str, int]]
    retrying: list[tuple[str, int]]


@dataclass
class Snapshot:
    """Every number of one scrape, keyed by environment id (the edge turns ids into names)."""

    now: datetime
    environments: dict[str, str] = field(default_factory=dict)
    queue: list[QueueCount] = field(default_factory=list)
    instances: list[tuple[str, str, str, int]] = field(default_factory=list)
    desired_state: list[tuple[str, int]] = field(default_factory=list)
    resources: list[tuple[str, str, int]] = field(default_factory=list)
    agents: list[tuple[str, int]] = field(default_factory=list)
    agent_processes: int = 0
    compiles: list[tuple[str, str, str, int]] = field(default_factory=list)
    stages: list[tuple[str, str, str, int, float]] = field(default_factory=list)
    actions: list[tuple[str, str, str, str, int]] = field(default_factory=list)
    failed_exports: list[tuple[str, str, int]] = field(default_factory=list)
    #: compliance: checked resources ``(env, agent, type, outcome, n)``, open parts ``(env, status, n)``
    compliance_checks: list[tuple[str, str, str, str, int]] = field(default_factory=list)
    compliance_parts: list[tuple[str, str, int]] = field(default_factory=list)
    webhooks: WebhookCounts = field(default_factory=lambda: WebhookCounts(failed=[], retrying=[]))
    #: halted environments and paused ``(env_id, agent)`` names (``lsm.store.environments.halts``)
    halted: set[str] = field(default_factory=set)
    paused: set[tuple[str, str]] = field(default_factory=set)


def snapshot(conn: Connection, now: datetime) -> Snapshot:
    """Read every number of a scrape on ``conn``, a read transaction. Each number is exact as of
    its own statement; under PostgreSQL's read committed two numbers may be a moment apart,
    which a scrape every 15 s or more does not notice (no snapshot is held for it)."""
    found = Snapshot(now=now)
    env = EnvironmentRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    found.environments = {r[0]: r[1] for r in conn.execute(select(env.c.id, env.c.name))}
    found.queue = _queue(conn, now)
    inst = InstanceRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    found.instances = [
        (r[0], r[1], r[2], int(r[3]))
        for r in conn.execute(
            select(inst.c.env_id, inst.c.entity, inst.c.state, func.count()).group_by(
                inst.c.env_id, inst.c.entity, inst.c.state
            )
        )
    ]
    found.desired_state = [
        (r[0], int(r[1])) for r in conn.execute(select(ds_head.c.env_id, ds_head.c.latest))
    ]
    rs = lsm_resource_state
    found.resources = [
        (r[0], r[1], int(r[2]))
        for r in conn.execute(
            select(rs.c.env_id, rs.c.status, func.count()).group_by(rs.c.env_id, rs.c.status)
        )
    ]
    found.agents, found.agent_processes = _agents(conn, now)
    mc, ms, ma = lsm_metric_compile, lsm_metric_compile_stage, lsm_metric_deploy_action
    found.compiles = [(r[0], r[1], r[2], int(r[3])) for r in conn.execute(select(mc))]
    found.stages = [(r[0], r[1], r[2], int(r[3]), float(r[4])) for r in conn.execute(select(ms))]
    found.actions = [(r[0], r[1], r[2], r[3], int(r[4])) for r in conn.execute(select(ma))]
    fe = lsm_metric_failed_export
    found.failed_exports = [(r[0], r[1], int(r[2])) for r in conn.execute(select(fe))]
    found.compliance_checks, found.compliance_parts = compliance_reports.metric_rows(conn)
    found.webhooks = _webhooks(conn)
    found.halted, found.paused = halts.held(conn)
    return found


def _queue(conn: Connection, now: datetime) -> list[QueueCount]:
    """Queued and running requests per environment, kind and status, with the oldest one's
    creation time. The condition is the partial index's own text, literal: with bound
    parameters SQLite cannot prove the index applies and scans the history."""
    c = CompileRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    query = (
        select(c.c.env_id, c.c.kind, c.c.status, func.count(), func.min(c.c.created_at))
        .where(text(ACTIVE_SQL))
        .group_by(c.c.env_id, c.c.kind, c.c.status)
    )
    return [QueueCount(r[0], r[1], r[2], int(r[3]), utc(r[4]) or now) for r in conn.execute(query)]


def _agents(conn: Connection, now: datetime) -> tuple[list[tuple[str, int]], int]:
    """Live agent-name leases per environment, and live agent processes (the lease table is
    small: one row per agent name and process)."""
    lease = LeaseRow.__table__  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    live = conn.execute(
        select(lease.c.name).where(lease.c.name.like("agent%"), lease.c.expires_at > now)
    ).scalars()
    per_env: dict[str, int] = {}
    processes = 0
    for name in live:
        if name.startswith(PROCESS_PREFIX):
            processes += 1
        elif name.startswith(AGENT_PREFIX):
            env_id = name[len(AGENT_PREFIX) :].split(":", 1)[0]
            per_env[env_id] = per_env.get(env_id, 0) + 1
    return sorted(per_env.items()), processes


def _webhooks(conn: Connection) -> WebhookCounts:
    """Failed and retrying deliveries per environment.

    Both conditions are literal SQL (``status = 'failed'``, ``status = 'pending'``) so that the
    partial indexes on them are used on SQLite too: failed rows through
    ``ix_lsm_webhook_delivery_failed``, pending ones through the sender's
    ``ix_lsm_webhook_delivery_due``; delivered rows, the bulk of the table, are never read.
    """
    env = delivery_t.c.env_id
    failed = conn.execute(select(env, func.count()).where(text(FAILED_SQL)).group_by(env))
    retrying = conn.execute(
        select(env, func.count()).where(text(PENDING_SQL), delivery_t.c.attempts > 0).group_by(env)
    )
    return WebhookCounts(
        failed=[(r[0], int(r[1])) for r in failed], retrying=[(r[0], int(r[1])) for r in retrying]
    )


__all__ = ["QueueCount", "Snapshot", "WebhookCounts", "snapshot"]
