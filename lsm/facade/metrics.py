"""``MetricsFacade``: the whole system's numbers in the Prometheus text exposition format.

Why ``prometheus_client`` with a collector built per scrape, instead of the usual
process-global registry: the numbers belong to the database, not to the process that is
scraped (``lsm.store.metrics``), so nothing is kept in memory between scrapes and every
API process answers the same. The library still does what is easy to get subtly wrong by
hand: metric and label escaping, ``_total``/``_count``/``_sum`` suffixes, ``# HELP``/``# TYPE``.

Every metric carries ``environment`` (the environment's name). Gauges of the compile queue are
written for every kind of every environment, zeros included, so that a dashboard shows an
empty queue as 0 rather than as a gap.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.schemas.compiles import CompileKind
from lsm.schemas.deploy import ActionKind
from lsm.store.metrics import Snapshot, WebhookCounts, snapshot

#: the ``Content-Type`` of the text exposition format
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class MetricsFacade:
    """``GET /metrics``."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def snapshot(self, _ctx: RequestContext) -> Snapshot:
        """Every number of one scrape (the route checked the caller's global viewer role)."""
        now = datetime.now(UTC)
        with self.core.db.read() as session:
            return snapshot(session.connection(), now)

    def exposition(self, ctx: RequestContext) -> bytes:
        """The scrape's body in the text exposition format (``CONTENT_TYPE``)."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(SnapshotCollector(self.snapshot(ctx)))
        return generate_latest(registry)


class SnapshotCollector(Collector):
    """The metric families of one ``Snapshot`` (see docs/api.md, metrics)."""

    def __init__(self, found: Snapshot) -> None:
        self.found = found

    def env(self, env_id: str) -> str:
        """An environment's name (its id when it was removed while counters still name it)."""
        return self.found.environments.get(env_id, env_id)

    def collect(self) -> Iterator[Metric]:
        found = self.found
        yield from self._queue()
        compiles = CounterMetricFamily(
            "lsm_compiles",
            "Compiles that ran, by kind and outcome.",
            labels=["environment", "kind", "status"],
        )
        for env_id, kind, status, count in found.compiles:
            compiles.add_metric([self.env(env_id), kind, status], count)
        yield compiles
        failed_exports = CounterMetricFamily(
            "lsm_failed_exports",
            "Exporting compiles that failed, by error kind (written on the instances that waited on them).",
            labels=["environment", "error"],
        )
        for env_id, error, count in found.failed_exports:
            failed_exports.add_metric([self.env(env_id), error], count)
        yield failed_exports
        stages = SummaryMetricFamily(
            "lsm_compile_stage_seconds",
            "Time compiles spent per stage (stage 'total': the whole compile).",
            labels=["environment", "kind", "stage"],
        )
        for env_id, kind, stage, count, seconds in found.stages:
            stages.add_metric([self.env(env_id), kind, stage], count_value=count, sum_value=seconds)
        yield stages
        instances = GaugeMetricFamily(
            "lsm_instances",
            "Service instances by entity and state (deleted ones in their terminal state).",
            labels=["environment", "entity", "state"],
        )
        for env_id, entity, state, count in found.instances:
            instances.add_metric([self.env(env_id), entity, state], count)
        yield instances
        versions = GaugeMetricFamily(
            "lsm_desired_state_version", "The newest desired-state version number.", labels=["environment"]
        )
        for env_id, number in found.desired_state:
            versions.add_metric([self.env(env_id)], number)
        yield versions
        resources = GaugeMetricFamily(
            "lsm_resources",
            "Resources of the newest version by deploy status.",
            labels=["environment", "status"],
        )
        for env_id, status, count in found.resources:
            resources.add_metric([self.env(env_id), status], count)
        yield resources
        yield from self._deploy()
        yield from self._compliance()
        yield from self._webhooks(found.webhooks)
        yield from self._brake()

    def _brake(self) -> Iterator[Metric]:
        """The emergency brake: a gauge per environment (0 or 1), one per paused agent name."""
        found = self.found
        halted = GaugeMetricFamily(
            "lsm_environment_halted",
            "1 while the environment is halted (no compile runs, no agent deploys), else 0.",
            labels=["environment"],
        )
        for env_id in sorted(found.environments):
            halted.add_metric([self.env(env_id)], 1 if env_id in found.halted else 0)
        yield halted
        paused = GaugeMetricFamily(
            "lsm_agent_paused",
            "Paused agent names (1 each): their resources wait.",
            labels=["environment", "agent"],
        )
        for env_id, agent in sorted(found.paused):
            paused.add_metric([self.env(env_id), agent], 1)
        yield paused

    def _queue(self) -> Iterator[Metric]:
        found = self.found
        labels = ["environment", "kind"]
        depth = GaugeMetricFamily(
            "lsm_compile_queue_depth", "Compile requests waiting, by kind.", labels=labels
        )
        running = GaugeMetricFamily(
            "lsm_compile_running", "Compile requests running, by kind.", labels=labels
        )
        age = GaugeMetricFamily(
            "lsm_compile_queue_oldest_age_seconds",
            "How long the oldest waiting compile request has waited, by kind (0: none waits).",
            labels=labels,
        )
        counted = {(q.env_id, q.kind, q.status): q for q in found.queue}
        for env_id in sorted(found.environments):
            for kind in CompileKind:
                names = [self.env(env_id), kind.value]
                queued = counted.get((env_id, kind.value, "queued"))
                depth.add_metric(names, queued.count if queued else 0)
                waited = (found.now - queued.oldest).total_seconds() if queued else 0.0
                age.add_metric(names, max(waited, 0.0))
                busy = counted.get((env_id, kind.value, "running"))
                running.add_metric(names, busy.count if busy else 0)
        yield from (depth, running, age)

    def _deploy(self) -> Iterator[Metric]:
        found = self.found
        actions = CounterMetricFamily(
            "lsm_deploy_actions",
            "Deploy actions (action log lines, dry runs left out) by agent, resource type and action.",
            labels=["environment", "agent", "resource_type", "action"],
        )
        failures = CounterMetricFamily(
            "lsm_deploy_failures",
            "Failed deploy tries (action 'error') by agent and resource type.",
            labels=["environment", "agent", "resource_type"],
        )
        for env_id, agent, rtype, action, count in found.actions:
            actions.add_metric([self.env(env_id), agent, rtype, action], count)
            if action == ActionKind.ERROR:  # a failed deploy try
                failures.add_metric([self.env(env_id), agent, rtype], count)
        yield actions
        yield failures
        leases = GaugeMetricFamily(
            "lsm_agent_leases", "Agent names held by a live agent process.", labels=["environment"]
        )
        for env_id, count in found.agents:
            leases.add_metric([self.env(env_id)], count)
        yield leases
        yield GaugeMetricFamily("lsm_agent_processes", "Live agent processes.", value=found.agent_processes)

    def _compliance(self) -> Iterator[Metric]:
        checks = CounterMetricFamily(
            "lsm_compliance_checks",
            "Resources checked by compliance reports, by agent, resource type and outcome.",
            labels=["environment", "agent", "resource_type", "outcome"],
        )
        for env_id, agent, rtype, outcome, count in self.found.compliance_checks:
            checks.add_metric([self.env(env_id), agent, rtype, outcome], count)
        yield checks
        parts = GaugeMetricFamily(
            "lsm_compliance_parts",
            "Compliance report parts (one per agent name) waiting for an agent or running.",
            labels=["environment", "status"],
        )
        for env_id, status, count in self.found.compliance_parts:
            parts.add_metric([self.env(env_id), status], count)
        yield parts

    def _webhooks(self, counts: WebhookCounts) -> Iterator[Metric]:
        failed = GaugeMetricFamily(
            "lsm_webhook_deliveries_failed",
            "Webhook deliveries that gave up (failed after their last retry).",
            labels=["environment"],
        )
        for env_id, count in counts.failed:
            failed.add_metric([self.env(env_id)], count)
        yield failed
        retrying = GaugeMetricFamily(
            "lsm_webhook_deliveries_retrying",
            "Webhook deliveries still pending after at least one failed attempt.",
            labels=["environment"],
        )
        for env_id, count in counts.retrying:
            retrying.add_metric([self.env(env_id)], count)
        yield retrying
