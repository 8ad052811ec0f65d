"""``Executor``: runs one claimed resource's handler under its metaparameters, and says what to write.

Why one place: every handler gets the metaparameters of docs/semantics.md §5 the same way,
whatever it does, because they are applied here around ``handler.deploy`` and nowhere else:

* ``limit`` / ``burst``: a token is taken before anything runs (bucket state is stored on the
  resource's row, so it survives new versions and agent take-over); without one the resource
  stays ``pending`` until the next token is due, and no action is logged;
* ``sema``: the agent's semaphores (``id``, ``id:N``, and the global ``--sema N``) are held, in
  sorted order, around ``pre`` / ``deploy`` / ``post``;
* ``noop`` (the resource's, or the global switch that no resource can undo): only the read side
  runs; changes found -> ``noop_pending`` (not final), none -> ``deployed``;
* ``retry`` / ``delay`` / ``backoff`` / ``max_delay``: a failure counts one more attempt; with
  tries left the resource is ``pending`` again at its next attempt time, spent -> ``failed``;
  a success resets the counter;
* ``poll``: a deployed resource is re-checked ``poll`` seconds later (for a discovery resource:
  this is how periodic discovery is configured).

A resource that left the desired state runs the same way, with its last desired attributes and
``purged`` set (``Claimed.removal``): its handler reads it and deletes it if present, under its
own metaparameters; a success drops its row (``lsm.store.deploy.removals``).

A discovery handler's findings (``ctx.discovered``) are validated here with
``check_discovery_output`` (pure, before any transaction): bad output fails the run like an
exception does. Valid findings travel on the ``Result`` and the agent stores them with
``record_discovery`` in the transaction that writes the result.

Any exception, a missing handler (``NoHandler``) and stored attributes that do not fit the
handler's class all end as an ``error`` action with the message and traceback in its log lines.
The per-resource time limit is enforced by the agent (``lsm.deploy.batches``), which runs this in
a thread it can give up on.
"""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from lsm.deploy.handler import HandlerContext, LogLine
from lsm.deploy.jail import Jail
from lsm.deploy.materialize import run_handler
from lsm.deploy.metaparams import LATEST, Bucket, Semaphores, after_failure, take_token
from lsm.deploy.registry import HandlerRegistry
from lsm.discovery.results import check_discovery_output
from lsm.model.meta import DEFAULT_META, Meta, MetaError, meta_of
from lsm.schemas.deploy import ResourceStatus
from lsm.store.deploy.claiming import Claimed
from lsm.store.deploy.plan import desired_hash
from lsm.store.deploy.results import Result

#: handler actions that change the target (with noop: reported, not applied)
CHANGING = frozenset({"create", "update", "delete"})


@dataclass(frozen=True)
class RunSettings:
    """How the agent runs its resources now (from its configuration and the environment's settings)."""

    state_dir: Path
    noop: bool = False
    timeout: float = 300.0
    #: where handlers may act (``None``: the state directory alone)
    jail: Jail | None = None


def _later(now: datetime, seconds: float) -> datetime:
    """``now + seconds``, never past ``LATEST`` (an absurd but valid rate must not overflow)."""
    try:
        return min(now + timedelta(seconds=seconds), LATEST)
    except OverflowError:
        return LATEST


def _json(value: Any) -> Any:
    """A JSON-safe copy (handlers may report paths, sets, bytes...)."""
    return json.loads(json.dumps(value, default=str))


def _line(line: LogLine) -> dict[str, Any]:
    return {
        "level": line.level,
        "message": line.message,
        "at": datetime.fromtimestamp(line.at).astimezone().isoformat(),
        "data": _json(line.data),
    }


class Executor:
    """Runs claimed resources; thread-safe (one per agent process, shared by its handler threads)."""

    def __init__(self, semaphores: Semaphores, clock: Callable[[], datetime]) -> None:
        self.semaphores = semaphores
        self.clock = clock

    def run(
        self,
        registry: HandlerRegistry,
        item: Claimed,
        record: tuple[str, str] | None,
        settings: RunSettings,
    ) -> Result:
        now = self.clock()
        ready = self.admit(item, record, now)
        if isinstance(ready, Result):
            return ready
        meta, ran_hash, attributes, requires, bucket, started = ready
        noop = settings.noop or meta.noop
        ctx = HandlerContext(item.resource_id, state_dir=settings.state_dir, dry_run=noop, jail=settings.jail)
        if item.removal is not None:
            ctx.info(
                f"left the desired state in version {item.version}: removed from its target "
                "(deletion policy 'delete')"
            )
        try:
            with self.semaphores.hold(meta.sema, follow=item.removal is not None):
                run_handler(registry, ctx, item.resource_id, attributes, requires, dry_run=noop)
            discovered = self._discovered(ctx)
        except Exception as exc:
            return self._failure(item, meta, ran_hash, now, started, exc, ctx.logs, ctx.changes, bucket)
        return self.outcome(item, meta, ran_hash, now, started, ctx, bucket, noop, discovered)

    def outcome(
        self,
        item: Claimed,
        meta: Meta,
        ran_hash: str,
        now: datetime,
        started: float,
        ctx: HandlerContext,
        bucket: Bucket | None,
        noop: bool,
        discovered: dict[str, Any] | None = None,
        error: BaseException | None = None,
    ) -> Result:
        """The result of one resource's run (alone or in a group) from what its context holds;
        ``error``: it failed (counted against its own ``retry``)."""
        if error is not None:
            return self._failure(item, meta, ran_hash, now, started, error, ctx.logs, ctx.changes, bucket)
        changes = {k: {"current": c.current, "desired": c.desired} for k, c in ctx.changes.items()}
        if noop:
            found = ctx.action in CHANGING
            status = ResourceStatus.NOOP_PENDING if found else ResourceStatus.DEPLOYED
            action = "noop" if found else "read"
        else:
            status, action = ResourceStatus.DEPLOYED, ctx.action
        deployed = status == ResourceStatus.DEPLOYED
        return self._result(
            item,
            status,
            ran_hash=ran_hash,
            now=now,
            action=self._action(item, action, status, changes, ctx.logs, now, started, noop),
            attempts=0,
            deployed_hash=ran_hash if deployed else None,
            poll_at=_later(now, meta.poll) if deployed and meta.poll > 0 else None,
            bucket=bucket,
            discovered=discovered if deployed else None,
        )

    def admit(
        self, item: Claimed, record: tuple[str, str] | None, now: datetime
    ) -> Result | tuple[Meta, str, dict[str, Any], tuple[str, ...], Bucket | None, float]:
        """What runs before a handler: the resource's record and metaparameters, and a token of
        its ``limit``. A ``Result`` when it does not run now (gone, bad ``meta``, no token);
        otherwise ``(meta, ran hash, attributes, requires, bucket, started)``."""
        if record is None:  # gone from the desired state since it was planned: the next plan removes it
            return self._result(
                item, ResourceStatus.PENDING, ran_hash=item.desired_hash, now=now, action=None
            )
        attributes_text, requires_text = record
        ran_hash = desired_hash(attributes_text, requires_text)
        attributes: dict[str, Any] = json.loads(attributes_text)
        requires = tuple(json.loads(requires_text))
        started = time.perf_counter()
        try:
            meta = meta_of(attributes)
        except MetaError as exc:
            return self._failure(item, DEFAULT_META, ran_hash, now, started, exc, [], {})
        bucket = (
            Bucket(item.bucket_tokens, item.bucket_at)
            if item.bucket_tokens is not None and item.bucket_at
            else None
        )
        allowed, bucket, wait = take_token(meta, bucket, now)
        if not allowed:
            return self._result(
                item,
                ResourceStatus.PENDING,
                ran_hash=ran_hash,
                now=now,
                action=None,
                attempts=item.attempts,
                next_attempt_at=_later(now, wait),
                bucket=bucket,
            )
        return meta, ran_hash, attributes, requires, bucket, started

    @staticmethod
    def _discovered(ctx: HandlerContext) -> dict[str, Any] | None:
        """A discovery run's findings as plain JSON, or ``InvalidDiscoveryOutput`` naming the bad entry."""
        if ctx.discovered is None:
            return None
        return {row.resource_id: row.attributes for row in check_discovery_output(ctx.discovered)}

    def refused(
        self, result: Result, item: Claimed, record: tuple[str, str] | None, exc: BaseException
    ) -> Result:
        """``result`` (a successful discovery run) turned into a failed try because its findings
        could not be stored: an ``error`` action, counted against the resource's ``retry``."""
        meta = DEFAULT_META
        if record is not None:
            try:
                meta = meta_of(json.loads(record[0]))
            except MetaError:
                pass
        bucket = None
        if result.bucket_tokens is not None and result.bucket_at is not None:
            bucket = Bucket(result.bucket_tokens, result.bucket_at)
        now, started = self.clock(), time.perf_counter()
        failed = self._failure(item, meta, result.ran_hash, now, started, exc, [], {}, bucket)
        if result.action is not None and failed.action is not None:
            failed.action["messages"] = [*result.action["messages"], *failed.action["messages"]]
            failed.action["duration_ms"] = result.action["duration_ms"]
        return failed

    # -- outcomes ------------------------------------------------------------------------------------
    def _failure(
        self,
        item: Claimed,
        meta: Meta,
        ran_hash: str,
        now: datetime,
        started: float,
        exc: BaseException,
        logs: list[LogLine],
        changes: Mapping[str, Any],
        bucket: Bucket | None = None,
    ) -> Result:
        attempts = item.attempts + 1
        decision = after_failure(meta, attempts, now)
        status = ResourceStatus.FAILED if decision.final else ResourceStatus.PENDING
        message = f"{type(exc).__name__}: {exc}"
        lines = [_line(line) for line in logs]
        lines.append(
            {
                "level": "error",
                "message": message,
                "at": now.isoformat(),
                "data": {"traceback": "".join(traceback.format_exception(exc)), "attempt": attempts},
            }
        )
        action = self._action(item, "error", status, {}, [], now, started, False)
        action["messages"] = lines
        action["changes"] = _json({k: {"current": c[0], "desired": c[1]} for k, c in changes.items()})
        return self._result(
            item,
            status,
            ran_hash=ran_hash,
            now=now,
            action=action,
            attempts=attempts,
            last_error=message,
            next_attempt_at=decision.next_attempt_at,
            bucket=bucket,
        )

    def _action(
        self,
        item: Claimed,
        action: str,
        status: str,
        changes: Mapping[str, Any],
        logs: list[LogLine],
        now: datetime,
        started: float,
        dry_run: bool,
    ) -> dict[str, Any]:
        return {
            "resource_id": item.resource_id,
            "version": item.version,
            "action": action,
            "status": status,
            "changes": _json(dict(changes)),
            "messages": [_line(line) for line in logs],
            "started_at": now,
            "duration_ms": (time.perf_counter() - started) * 1000.0,
            "agent": item.agent,
            "dry_run": dry_run,
        }

    def _result(
        self,
        item: Claimed,
        status: str,
        *,
        ran_hash: str,
        now: datetime,
        action: dict[str, Any] | None,
        attempts: int | None = None,
        deployed_hash: str | None = None,
        last_error: str | None = None,
        next_attempt_at: datetime | None = None,
        poll_at: datetime | None = None,
        bucket: Bucket | None = None,
        discovered: dict[str, Any] | None = None,
    ) -> Result:
        return Result(
            resource_id=item.resource_id,
            agent=item.agent,
            version=item.version,
            ran_hash=ran_hash,
            status=status,
            attempts=item.attempts if attempts is None else attempts,
            deployed_hash=deployed_hash,
            last_error=last_error,
            next_attempt_at=next_attempt_at,
            poll_at=poll_at,
            bucket_tokens=bucket.tokens if bucket is not None else item.bucket_tokens,
            bucket_at=bucket.at if bucket is not None else item.bucket_at,
            action=action,
            set_name=item.set_name,
            discovered=discovered,
            removal=item.removal is not None,
        )

    def timed_out(
        self, item: Claimed, settings: RunSettings, started: float, record: tuple[str, str] | None = None
    ) -> Result:
        """The handler did not return within ``settings.timeout``: a failed try, counted against
        the resource's ``retry`` like any other (its thread is abandoned)."""
        exc = TimeoutError(
            f"the handler of {item.resource_id} did not finish within {settings.timeout:g} s (deploy_timeout)"
        )
        meta, ran_hash = DEFAULT_META, item.desired_hash
        if record is not None:
            ran_hash = desired_hash(*record)
            try:
                meta = meta_of(json.loads(record[0]))
            except MetaError:
                pass
        return self._failure(item, meta, ran_hash, self.clock(), started, exc, [], {})


__all__ = ["CHANGING", "Executor", "RunSettings"]
