"""Halt and resume an environment, pause and unpause its agents: the emergency brake.

Why a facade of its own: the brake is stored by ``lsm.store.environments.halts`` and obeyed where work
is claimed (``lsm.compiler.queue``, ``lsm.deploy.claiming``); this is the operator's side of it.
Every call is idempotent (a second halt answers the same environment and changes nothing),
writes an audit line when it changed something, and answers the environment as
``GET /api/v1/environments/{env}`` shows it.

A resume or an unpause lets work run again: on PostgreSQL the workers and agents of other
processes hear ``NOTIFY lsm_work`` at the commit, those of this process are woken by ``wake``
(given by the composition root), and on SQLite the other processes see the commit through
``PRAGMA data_version`` (``lsm.services.wakeup``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsm.facade.context import RequestContext
from lsm.facade.core import Core
from lsm.schemas.environments import PausedAgentOut
from lsm.store import audit
from lsm.store.compiles.requests import notify_work
from lsm.store.environments import halts
from lsm.store.instances import repository as repo
from lsm.store.tables import utcnow


def no_wake(_env_id: str) -> None:
    """No worker or agent runs in this process: they poll (or hear ``NOTIFY`` on PostgreSQL)."""


def brake_fields(brake: halts.HaltState) -> dict[str, Any]:
    """The halt fields of ``EnvironmentOut`` for ``brake``."""
    return {
        "halted": brake.halted,
        "halted_at": brake.halted_at,
        "halted_by": brake.halted_by,
        "paused_agents": [
            PausedAgentOut(
                agent=p.agent, paused_at=p.paused_at, paused_by=p.paused_by, stay_paused=p.stay_paused
            )
            for p in brake.paused.values()
        ],
    }


class HaltsFacade:
    """``/api/v1/environments/{env}/halt|resume`` and ``.../agents/{name}/pause|unpause``."""

    def __init__(self, core: Core, *, wake: Callable[[str], None] = no_wake) -> None:
        self.core = core
        self.wake = wake

    def state(self, ctx: RequestContext) -> halts.HaltState:
        """The halt and paused agents of the environment of ``ctx``."""
        with self.core.db.read() as session:
            row = repo.get_environment(session, ctx.environment or self.core.environments.default)
            return halts.state(session.connection(), row.id)

    def halt(self, ctx: RequestContext) -> str:
        """Halt the environment: orders are still taken and compiles queue, but nothing runs."""
        return self._change(ctx, "environment.halt", None, halts.halt, actor=ctx.actor, now=utcnow())

    def resume(self, ctx: RequestContext) -> str:
        """Lift the halt (and the pauses made during it that were not asked to stay)."""
        return self._change(ctx, "environment.resume", None, halts.resume, wakes=True)

    def pause(self, ctx: RequestContext, agent: str, *, stay_paused: bool = False) -> str:
        """Pause one agent name: its resources wait, the others deploy."""
        return self._change(
            ctx,
            "agent.pause",
            agent,
            halts.pause,
            agent,
            actor=ctx.actor,
            now=utcnow(),
            stay_paused=stay_paused,
        )

    def unpause(self, ctx: RequestContext, agent: str) -> str:
        """Lift an agent's pause (a halt of the environment still holds it until the resume)."""
        return self._change(ctx, "agent.unpause", agent, halts.unpause, agent, wakes=True)

    def _change(
        self,
        ctx: RequestContext,
        action: str,
        target: str | None,
        change: Callable[..., bool],
        *args: Any,
        wakes: bool = False,
        **kwargs: Any,
    ) -> str:
        """Apply ``change`` to the environment of ``ctx`` in one transaction, audited when it
        changed something; the environment's id."""
        with self.core.db.write() as session:
            row = repo.get_environment(session, ctx.environment or self.core.environments.default)
            env_id = row.id
            changed = change(session.connection(), env_id, *args, **kwargs)
            if changed:
                audit.record(
                    session,
                    actor=ctx.actor,
                    request_id=ctx.request_id,
                    action=action,
                    target=target or row.name,
                    env_id=env_id,
                    **({"stay_paused": kwargs["stay_paused"]} if "stay_paused" in kwargs else {}),
                )
                if wakes:
                    notify_work(session, env_id)
        if changed and wakes:
            self.wake(env_id)
        return env_id
