"""A failed exporting compile, written on every instance that waited on it.

Why: an instance in ``creating``, ``update_inprogress`` or ``deleting`` moves on when the deploy
of its exported desired state finishes (its resource-based transfer). When the export itself
fails (an export rule, a metaparameter, a model error, a time limit, a worker that died), no
deploy ever comes, and without this the instance would wait for ever with a silent log
(docs/semantics.md §6, "Nothing stranded").

``ExportFailures.record`` is called by the compile queue in the transaction that records the
request as failed (``CompileQueue.finish``, and the take-over of a request whose worker died
too often), so every cause of failure reaches it and no crash can separate the compile's
record from the instances' steps. It finds the instances that waited (those whose desired
state has no exported record: ``lsm.inventory.export_failures``) among what the batch asked
for, and hands each an ``ExportFailed`` through the orchestrator, the one place that changes
state: the lifecycle's ``export_failed`` transfer fires, or the failure is only logged in a
state without one. It also counts the failure for ``/metrics``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from sqlmodel import Session

from lsm.compiler.queue import Batch
from lsm.errors import NotFound
from lsm.inventory import metric_counters
from lsm.inventory.export_failures import Waiting, waiting_on_export
from lsm.orchestration import EnvironmentContext, ExportFailed, Orchestrator
from lsm.schemas.compiles import CompileKind

log = logging.getLogger(__name__)

#: resource and set ids named in an event line at most (the compile report has them all)
MAX_NAMED = 10
#: characters of the error message an event line keeps
MAX_MESSAGE = 2000


def describe(compile_id: str, error: dict[str, Any]) -> str:
    """The event-log line of a failed export: the compile, the error kind, the rule where there
    is one, the resources and sets involved, and what the operator can do."""
    kind = str(error.get("error") or "unknown")
    rule = error.get("rule")
    head = f"exporting compile {compile_id} failed: {kind}" + (f" (rule {rule})" if rule is not None else "")
    text = str(error.get("message") or "no message")
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "..."
    parts = [f"{head}: {text}"]
    for name in ("resources", "sets"):
        named = _names(error.get(name))
        if named:
            more = f" and {len(named) - MAX_NAMED} more" if len(named) > MAX_NAMED else ""
            parts.append(f"{name}: {', '.join(named[:MAX_NAMED])}{more}")
    parts.append(f"fix the named instance or model, then retry compile {compile_id}")
    return "; ".join(parts)


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return []


class ExportFailures:
    """Records failed exporting compiles on their instances (the compile queue's hook)."""

    def __init__(self, orchestrator: Orchestrator, contexts: Callable[[str], EnvironmentContext]) -> None:
        self.orchestrator = orchestrator
        self.contexts = contexts

    def record(self, session: Session, batch: Batch, report: dict[str, Any]) -> Callable[[], None] | None:
        """In ``session`` (the transaction recording ``batch`` as failed): count the failure and
        move the instances that waited on it; what to run once that transaction committed."""
        leader = batch.leader
        error = dict(report.get("error") or {})
        metric_counters.count_failed_export(session.connection(), leader.env_id, str(error.get("error")))
        try:
            ctx = self.contexts(leader.env_id)
        except Exception:  # the model does not load: its lifecycles are unknown, the report says why
            log.warning(
                "compile %s failed and environment %s does not load; its instances keep their state",
                leader.id,
                leader.env_id,
                exc_info=True,
            )
            return None
        waiting = [w for w in self._waiting(session, batch) if _exports(ctx, w)]
        if not waiting:
            return None
        message = describe(leader.id, error)
        commands = [ExportFailed(w.id, w.desired_state_version, leader.id, message) for w in waiting]
        return self.orchestrator.execute_in(session, ctx, list(commands))

    def _waiting(self, session: Session, batch: Batch) -> list[Waiting]:
        """The instances the batch was to export: every one for a full compile (or a partial one
        chosen by a selector alone), else those it named and those of the entities it named."""
        env_id = batch.leader.env_id
        ids, entities = batch.requested_ids(), set(batch.service_entities())
        if batch.kind is CompileKind.FULL or not (ids or entities):
            return waiting_on_export(session, env_id, None)
        found = {w.id: w for w in waiting_on_export(session, env_id, ids)}
        if entities:
            found.update((w.id, w) for w in waiting_on_export(session, env_id, None) if w.entity in entities)
        return list(found.values())


def _exports(ctx: EnvironmentContext, waiting: Waiting) -> bool:
    """Whether the instance's state exports (only those wait on an export); an entity the model
    no longer binds is left alone."""
    try:
        lifecycle = ctx.lifecycle(ctx.binding(waiting.entity))
        return lifecycle.has_state(waiting.state) and lifecycle.state(waiting.state).export_resources
    except NotFound:
        return False
