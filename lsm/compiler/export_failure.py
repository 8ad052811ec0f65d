"""A failed exporting compile, written on every instance that waited on it.

Why: an instance in ``creating``, ``update_inprogress`` or ``deleting`` moves on when the deploy
of its exported desired state finishes (its resource-based transfer). When the export itself
fails (an export rule, a metaparameter, a model error, a time limit, a worker that died), no
deploy ever comes, and without this the instance would wait for ever with a silent log
(docs/semantics.md §1, `export_failed`).

``ExportFailures.record`` is called by the compile queue in the transaction that records the
request as failed (``CompileQueue.finish``, and the take-over of a request whose worker died
too often), so every cause of failure reaches it and no crash can separate the compile's
record from the instances' steps. It finds the instances that waited (those whose desired
state has no exported record: ``lsm.store.compiles.export_failures``) among what the batch asked
for, and hands each an ``ExportFailed`` through the orchestrator, the one place that changes
state (in bulk: ``Orchestrator.fail_exports``): the lifecycle's ``export_failed`` transfer
fires, or the failure is only logged in a state without one. It also counts the failure for ``/metrics``.

A model that does not load when the failure is recorded (the failure may be that very model)
does not strand the instances: their lifecycles are known without it, from the catalog the
environment persisted and the lifecycle registry, so the failure still moves them or, where
only the model could take the transfer, still writes their line (and ``diagnose`` names it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from sqlmodel import Session

from lsm.compiler.queue import Batch
from lsm.gc_pause import gc_paused
from lsm.lifecycle import LifecycleRegistry
from lsm.model.loader import Model
from lsm.orchestration import EnvironmentContext, Orchestrator
from lsm.orchestration.export_failed import lifecycle_name
from lsm.schemas.compiles import CompileKind
from lsm.store import metric_counters
from lsm.store.compiles.export_failures import Waiting, entity_lifecycles, waiting_on_export
from lsm.store.environments.settings import parse_settings

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

    def __init__(
        self,
        orchestrator: Orchestrator,
        contexts: Callable[[str], EnvironmentContext],
        lifecycles: LifecycleRegistry | None = None,
    ) -> None:
        """``lifecycles``: the registry the environments use, what decides without the model."""
        self.orchestrator = orchestrator
        self.contexts = contexts
        self.lifecycles = lifecycles

    def record(self, session: Session, batch: Batch, report: dict[str, Any]) -> Callable[[], None] | None:
        """In ``session`` (the transaction recording ``batch`` as failed): count the failure and
        move the instances that waited on it; what to run once that transaction committed."""
        leader = batch.leader
        error = dict(report.get("error") or {})
        metric_counters.count_failed_export(session.connection(), leader.env_id, str(error.get("error")))
        persisted: dict[str, str] | None = None
        try:
            ctx = self.contexts(leader.env_id)
        except Exception:  # the model does not load: the persisted catalog names the lifecycles
            if self.lifecycles is None:
                log.warning(
                    "compile %s failed and environment %s does not load; its instances keep their state",
                    leader.id,
                    leader.env_id,
                    exc_info=True,
                )
                return None
            log.info(
                "environment %s does not load: compile %s's failure is decided without its model",
                leader.env_id,
                leader.id,
                exc_info=True,
            )
            ctx = _without_model(leader.env_id, self.lifecycles)
            persisted = entity_lifecycles(session, leader.env_id)
        with gc_paused():  # thousands of rows and lines, no cycles: as a compile (lsm.gc_pause)
            exports = _Exports(ctx, persisted)
            waiting = [w for w in self._waiting(session, batch) if exports(w)]
            if not waiting:
                return None
            return self.orchestrator.fail_exports(
                session,
                ctx,
                waiting,
                compile_id=leader.id,
                message=describe(leader.id, error),
                lifecycles=persisted,
            )

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


def _without_model(env_id: str, lifecycles: LifecycleRegistry) -> EnvironmentContext:
    """The context of an environment whose model does not load: it binds nothing, its
    lifecycles are the registry's (``fail_exports`` is given the persisted entity lifecycles)."""
    return EnvironmentContext(
        env_id=env_id,
        name=env_id,
        model=Model(bindings=[], source=""),
        lifecycles=lifecycles,
        settings=parse_settings({}),
    )


class _Exports:
    """Whether an instance's state exports (only those wait on an export), asked once per entity
    and state; an entity the model no longer binds (nor the persisted catalog) is left alone."""

    def __init__(self, ctx: EnvironmentContext, persisted: dict[str, str] | None = None) -> None:
        self.ctx = ctx
        self.persisted = persisted
        self.known: dict[tuple[str, str], bool] = {}

    def __call__(self, waiting: Waiting) -> bool:
        key = (waiting.entity, waiting.state)
        found = self.known.get(key)
        if found is None:
            found = self.known[key] = self._exports(*key)
        return found

    def _exports(self, entity: str, state: str) -> bool:
        name = lifecycle_name(self.ctx, entity, self.persisted)
        if name is None:
            return False
        lifecycle = self.ctx.lifecycles.get(name)
        return lifecycle.has_state(state) and lifecycle.state(state).export_resources
