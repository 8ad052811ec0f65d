"""Compile requests and reports, as the API serves them.

The request itself is written by ``lsm.store.compiles.requests.enqueue`` (the one writer of
compile rows), with the caller's actor and request id; the compile processing is woken through
the orchestrator's listeners.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lsm.errors import Conflict, InvalidInput, UnknownInstance
from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.facade.views import compile_out
from lsm.schemas.compile_reports import MAX_COMPILE_WAIT, CompileOut
from lsm.schemas.compiles import CompileKind, CompileStatus
from lsm.selection import available_selectors
from lsm.selection.specs import parameters_of, validate_spec
from lsm.store.compiles.export_failures import followers, retry_order
from lsm.store.compiles.requests import CompileOrder, enqueue
from lsm.store.instances import repository as repo

FINISHED = (CompileStatus.SUCCESS.value, CompileStatus.FAILED.value)


class CompilesFacade:
    """Request compiles (full or partial, optionally waiting) and read the queue and history."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def request_compile(
        self,
        ctx: RequestContext,
        *,
        kind: str = "full",
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        wait: bool = False,
        timeout: float = MAX_COMPILE_WAIT,
        incremental: bool | None = None,
        selector: Any = None,
    ) -> CompileOut:
        env = self.core.environments.context(ctx.environment)
        if kind not in ("full", "partial"):
            raise InvalidInput(f"compile kind must be 'full' or 'partial', not {kind!r}", field="kind")
        for entity in service_entities or []:
            env.binding(entity)
        if selector is not None:
            if kind != "partial":
                raise InvalidInput("only a partial compile takes a selector", field="selector")
            validate_spec(self.core.db, env.env_id, env.catalog, selector, model=env.model)
        if kind == "partial" and not (instance_ids or service_entities or selector is not None):
            raise InvalidInput(
                "a partial compile needs instance_ids or service_entities", field="instance_ids"
            )
        self._check_known(env.env_id, instance_ids)
        order = CompileOrder(
            env_id=env.env_id,
            kind=CompileKind(kind),
            requested_ids=list(instance_ids or []),
            service_entities=list(service_entities or []),
            exclude=list(exclude or []),
            reason="requested through the API",
            incremental=incremental if kind == "full" else None,
            selector=selector,
            actor=ctx.actor,
            request_id=ctx.request_id,
        )
        with self.core.db.write() as session:
            row = enqueue(session, order)
        self.core.orchestrator.notify(env.env_id)
        if wait:
            return self.wait_for_compile(ctx.in_environment(env.env_id), row.id, timeout=timeout)
        return compile_out(row)

    def retry_compile(self, ctx: RequestContext, compile_id: str) -> CompileOut:
        """Queue again what a failed exporting compile asked for: the same kind, ids, entities,
        selector and exclusions, as one request (a merged request retries the compile it was
        merged into, with everything merged there). Once it exports, the instances the failure
        moved (``failed``, ``update_failed``, ``delete_failed``) go on by their deploy.

        404 for an unknown compile; 409 for a validation compile (its instance's transfer asks
        again) or a compile that did not fail."""
        env = self.core.environments.context(ctx.environment)
        with self.core.db.write() as session:
            row = repo.get_compile(session, env.env_id, compile_id)
            leader = repo.get_compile(session, env.env_id, row.merged_into) if row.merged_into else row
            if leader.kind == CompileKind.VALIDATION.value:
                raise Conflict(
                    f"compile {compile_id} is a validation compile: only an exporting compile can be "
                    "retried (update the instance, or set its state, to validate it again)",
                    compile=compile_id,
                    kind=leader.kind,
                )
            if leader.status != CompileStatus.FAILED.value:
                raise Conflict(
                    f"compile {compile_id} is {leader.status}, not failed: "
                    "only a failed compile can be retried",
                    compile=compile_id,
                    status=leader.status,
                )
            order = retry_order(
                [leader, *followers(session, leader.id)], actor=ctx.actor, request_id=ctx.request_id
            )
            queued = enqueue(session, order)
        self.core.orchestrator.notify(env.env_id)
        return compile_out(queued)

    def wait_for_compile(
        self, ctx: RequestContext, compile_id: str, *, timeout: float = MAX_COMPILE_WAIT
    ) -> CompileOut:
        """Poll until the compile (or the compile it was merged into) finished, or ``timeout``."""
        deadline = time.monotonic() + min(timeout, MAX_COMPILE_WAIT)
        delay = 0.005
        while True:
            out = self.get_compile(ctx, compile_id)
            if out.status in FINISHED or time.monotonic() > deadline:
                return out
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    async def wait_for_compile_async(
        self, ctx: RequestContext, compile_id: str, *, timeout: float = MAX_COMPILE_WAIT, poll: float = 0.5
    ) -> CompileOut:
        """Wait, without holding a thread, until the compile finished or ``timeout`` (max 300 s) passed.

        Woken at once by compiles finished in this process (``Core.changes``); a compile finished
        by another process is seen at the next look at the database, every ``poll`` seconds.
        The database is read in a worker thread, only while looking.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(timeout, MAX_COMPILE_WAIT)
        while True:
            with self.core.changes.listener() as heard:
                out = await asyncio.to_thread(self.get_compile, ctx, compile_id)
                remaining = deadline - loop.time()
                if out.status in FINISHED or remaining <= 0:
                    return out
                await heard.wait(min(poll, remaining))

    def explain_compile(
        self,
        ctx: RequestContext,
        *,
        instance_ids: list[str] | None = None,
        service_entities: list[str] | None = None,
        exclude: list[str] | None = None,
        selector: Any = None,
    ) -> dict[str, Any]:
        """What a partial compile would select and why (``lsm compile --explain``): nothing is queued."""
        env = self.core.environments.context(ctx.environment)
        for entity in service_entities or []:
            env.binding(entity)
        if selector is not None:
            validate_spec(self.core.db, env.env_id, env.catalog, selector, model=env.model)
        self._check_known(env.env_id, instance_ids)
        return self.core.explain(
            env,
            instance_ids=instance_ids or [],
            service_entities=service_entities or [],
            exclude=exclude or [],
            selector=selector,
        )

    def _check_known(self, env_id: str, instance_ids: list[str] | None) -> None:
        """Refuse (404 naming them) requested ids that are no instance of the environment: a
        compile of nothing used to answer ``success`` as if those instances were compiled."""
        if not instance_ids:
            return
        with self.core.db.read() as session:
            unknown = repo.unknown_instance_ids(session, env_id, instance_ids)
        if unknown:
            shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
            raise UnknownInstance(
                f"no such instances in this environment: {shown}",
                field="instance_ids",
                instances=unknown[:100],
            )

    def list_selectors(self, ctx: RequestContext) -> list[dict[str, Any]]:
        """The selectors this environment can name, with their parameters (``lsm selector list``)."""
        env = self.core.environments.context(ctx.environment)
        return [
            {"name": name, "class": f"{cls.__module__}.{cls.__qualname__}", "parameters": parameters_of(cls)}
            for name, cls in available_selectors(env.model).items()
        ]

    def list_compiles(
        self,
        ctx: RequestContext,
        *,
        limit: int = 50,
        offset: int = 0,
        kind: CompileKind | None = None,
        status: CompileStatus | None = None,
    ) -> list[CompileOut]:
        """A page of the queue and history, newest first, optionally of one kind or status."""
        env_id = self.core.environments.context(ctx.environment).env_id
        with self.core.db.read() as session:
            rows = repo.list_compiles(
                session,
                env_id,
                limit=limit,
                offset=offset,
                kind=None if kind is None else kind.value,
                status=None if status is None else status.value,
            )
        return [compile_out(r) for r in rows]

    def get_compile(self, ctx: RequestContext, compile_id: str) -> CompileOut:
        env_id = self.core.environments.context(ctx.environment).env_id
        with self.core.db.read() as session:
            return compile_out(repo.get_compile(session, env_id, compile_id))
