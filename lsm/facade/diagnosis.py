"""Why is it stuck: an instance's causal chain, from its symptom down to the root cause.

The rules (docs/semantics.md §7), in the order they are tried; the first that finds something
tells the story, the others stay in the diagnosis' plain fields:

1. ``failed_validation`` — the last thing that happened to the instance is a failed validation
   compile: its model error, at the model's ``file:line`` (``error.location`` of the report).
2. ``failed_export`` — the last thing that happened to the instance is a failed exporting
   compile (an ``export_failed`` line; its state may have moved to the lifecycle's failure
   state): the compile, its error kind, export rule, resources and sets, and what to do (fix,
   then retry). Not once its desired state was exported since, nor while a newer compile that
   concerns it is queued (rule 4 says what that waits for).
3. resources — the instance's resources in the desired state it is at: a resource that failed
   (``failed_resource``, with 'retry 2 of 3 at 12:03' while the engine still retries), a skipped
   one (``skipped_dependency`` links down its ``requires``, across agents, to the failed root),
   one that is deploying or waiting for an agent (``deploying``) whose agent lease is stale
   (``stale_lock``).
4. ``pending_compile`` — a queued or running compile concerns the instance; what it waits for
   (another exporting compile: 'queued behind the full compile F, running since ...'), and a
   compile lease whose worker stopped its heartbeat or died (``stale_lock``).
5. ``in_transition`` when the state moves on by itself (``auto``/resource transfers), else
   ``none``.

A compile or a deploy the instance waits for may be held by the brake (``lsm.store.environments.halts``):
the chain then ends in ``halted`` (the environment is halted) or ``agent_paused`` (the agent of
a waiting resource is paused), which names who did it, since when, and the command that lets go.

Reads go through ``lsm.store`` (keyed, bounded); this module only decides. Rule 3 (the
resources) is ``lsm.facade.diagnosis_resources``; the situation and the causes every rule words
are ``lsm.facade.diagnosis_causes``.
"""

from __future__ import annotations

from lsm.facade.diagnosis_causes import Situation, clock, summary
from lsm.facade.diagnosis_resources import ResourceRule
from lsm.lifecycle import EXPORT_FAILED
from lsm.schemas.inventory import Cause, InstanceOut
from lsm.store import diagnosis_queries
from lsm.store.batches import aware
from lsm.store.leases import SQLITE_WORKER, owner_gone
from lsm.store.tables import CompileRow

#: triggers that move an instance on without anybody asking
MOVING_TRIGGERS = ("auto", "resource_based")


class Diagnosis(ResourceRule):
    """The causal chain of one instance, read in one session (``chain()``)."""

    def chain(self) -> list[Cause]:
        for rule in (self._validation, self._failed_export, self._resources, self._compile):
            found = rule()
            if found:
                return found
        state = self.s.instance.state
        moving = sorted({t for t, target in self.s.transfers if t in MOVING_TRIGGERS and target != state})
        if moving:
            message = f"`{state}` moves on by itself ({', '.join(moving)} transfer), nothing holds it back"
            return [self._cause("in_transition", message, "instance", self.s.instance.id, triggers=moving)]
        return [self._cause("none", f"nothing holds it back in `{state}`", "instance", self.s.instance.id)]

    # -- 1. a failed validation -------------------------------------------------------------------
    def _validation(self) -> list[Cause]:
        validation = self.s.validation
        if validation is None or validation.status != "failed" or not self.s.events:
            return []
        if self.s.events[-1].compile_id != validation.id:
            return []  # something happened to the instance since: the failure is history
        error = dict(validation.report.get("error") or {})
        location = error.get("location") or {}
        message = f"validation compile {validation.id} failed: {error.get('message', 'no report')}"
        if location:
            where = f"{location.get('file')}:{location.get('line')}"
            if where not in message:
                message += f" at {where}"
            if location.get("source"):
                message += f": `{location['source']}`"
        details = {"error": error.get("error"), "location": location or None}
        return [
            self._cause(
                "failed_validation", message, "validation", validation.id, validation.finished_at, **details
            )
        ]

    # -- 2. a failed export -------------------------------------------------------------------------
    def _failed_export(self) -> list[Cause]:
        line = self.s.events[-1] if self.s.events else None
        if line is None or line.trigger != EXPORT_FAILED or line.compile_id is None:
            return []
        pending = self.s.pending
        if pending is not None and aware(pending.created_at) > aware(line.created_at):
            return []  # a retry or a later export is on its way: what it waits for is told below
        record = (self.s.deploy or self._deploy_state())[0]
        if (
            record is not None
            and record.instance_desired_state_version == self.s.instance.desired_state_version
        ):
            return []  # exported since: its deploy tells the rest
        row = diagnosis_queries.compile_row(self.session, line.compile_id)
        error = dict(((row.report if row is not None else None) or {}).get("error") or {})
        kind, rule = error.get("error"), error.get("rule")
        what = f"{kind} (rule {rule})" if rule is not None else str(kind)
        todo = (
            f"fix the named instance or model, then retry the compile (`lsm compile --retry "
            f"{line.compile_id}`); any later export of its tree moves it on too"
        )
        message = (
            f"exporting compile {line.compile_id} failed: {what}: {error.get('message', 'no report')}; {todo}"
        )
        return [
            self._cause(
                "failed_export",
                message,
                "compile",
                line.compile_id,
                row.finished_at if row is not None else line.created_at,
                error=kind,
                rule=rule,
                resources=error.get("resources") or [],
                sets=error.get("sets") or [],
                todo=todo,
            )
        ]

    # -- 4. compiles ------------------------------------------------------------------------------
    def _compile(self) -> list[Cause]:
        pending = self.s.pending
        if pending is None:
            return []
        chain = [
            self._cause(
                "pending_compile", self._waiting_for(pending), "compile", pending.id, pending.created_at
            )
        ]
        holder: CompileRow | None = pending if pending.status == "running" else None
        if pending.merged_into is not None:  # the compile that runs it holds the lease
            leader = diagnosis_queries.compile_row(self.session, pending.merged_into)
            if leader is not None:
                since = f", running since {clock(leader.started_at)}" if leader.status == "running" else ""
                message = f"the {leader.kind} compile {leader.id} runs it{since}"
                chain.append(self._cause("pending_compile", message, "compile", leader.id, leader.started_at))
                holder = leader if leader.status == "running" else None
        if pending.status == "queued" and pending.kind != "validation":
            ahead = self._ahead_of(pending)
            if ahead is not None:
                since = f", running since {clock(ahead.started_at)}" if ahead.status == "running" else ""
                queued = "queued behind" if ahead.status == "queued" else "waiting for"
                message = f"{queued} the {ahead.kind} compile {ahead.id}{since}"
                chain.append(
                    self._cause(
                        "pending_compile", message, "compile", ahead.id, ahead.started_at or ahead.created_at
                    )
                )
                holder = ahead if ahead.status == "running" else None
        brake = self._brake()
        if brake.halted and pending.status == "queued":
            chain.append(self._halted(brake))  # the root: no compile is claimed until the resume
        elif holder is not None:
            stale = self._stale_compile(holder)
            if stale is not None:
                chain.append(stale)
        elif pending.status == "queued":
            # nothing runs: on SQLite the one compile worker's lease may be left by a dead worker
            worker = diagnosis_queries.leases(self.session, [SQLITE_WORKER]).get(SQLITE_WORKER)
            stale = None if worker is None else self._stale_lease(worker, "the compile worker", "worker")
            if stale is not None:
                chain.append(stale)
        return chain

    def _waiting_for(self, row: CompileRow) -> str:
        if row.merged_into is not None:
            return f"waiting for the {row.kind} compile {row.id}, merged into compile {row.merged_into}"
        if row.status == "running":
            return f"waiting for the {row.kind} compile {row.id}, running since {clock(row.started_at)}"
        return f"waiting for the {row.kind} compile {row.id}, queued at {clock(row.created_at)}"

    def _ahead_of(self, pending: CompileRow) -> CompileRow | None:
        """What an exporting request waits for: the running exporting compile of the environment,
        else a queued full compile it will be merged into, else an older queued request."""
        active = [
            r for r in diagnosis_queries.active_exporting(self.session, self.s.env_id) if r.id != pending.id
        ]
        running = [r for r in active if r.status == "running" and r.merged_into is None]
        if running:
            return running[0]
        fulls = [r for r in active if r.kind == "full" and r.merged_into is None]
        if fulls:
            return fulls[0]
        older = [r for r in active if aware(r.created_at) < aware(pending.created_at)]
        return older[0] if older else None

    def _stale_compile(self, row: CompileRow) -> Cause | None:
        """A running compile whose worker stopped renewing its lease, or whose process is gone."""
        if row.lease_expires is None or row.lease_owner is None:
            return None
        expires = aware(row.lease_expires)
        gone = owner_gone(row.lease_owner)
        if expires > self.now and not gone:
            return None
        holder = f"{row.lease_owner} since {clock(row.started_at)}"
        why = "whose process is gone" if gone else "whose heartbeat stopped"
        when = self.taken_over(expires, "worker that claims")
        message = f"the lease of compile {row.id} is held by {holder}, {why}; {when}"
        return self._cause(
            "stale_lock",
            message,
            "lock",
            f"compile:{row.id}",
            expires,
            holder=row.lease_owner,
            attempts=row.attempts,
        )


def display_name(instance: InstanceOut, identity: str | None) -> str:
    """How the summary names the instance: its entity and identity value (else a ``name``
    attribute, as most models have one), else its id."""
    attributes = instance.active_attributes or instance.candidate_attributes or {}
    value = attributes.get(identity or "name")
    return f"{instance.service_entity} {value if value is not None else instance.id}"


__all__ = ["Diagnosis", "Situation", "display_name", "summary"]
