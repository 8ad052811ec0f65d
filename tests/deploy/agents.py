"""Helpers of the deploy tests: an agent with an injected clock, desired state written directly."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import select

from lsm.deploy.agent import AgentService
from lsm.deploy.batches import DeployWork
from lsm.desired_state.records import ExportRequest, ResourceRecord
from lsm.runtime.wiring import ApiRuntime
from lsm.store.batches import utc
from lsm.store.deploy.tables import lsm_resource_action, lsm_resource_state


class Clock:
    """A clock a test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


#: the agents ``agent_for`` made in the running test; ``tests/deploy/conftest.py`` ends their
#: handler threads afterwards (left running, each test's threads stayed until the process ended)
MADE: list[AgentService] = []


def agent_for(
    engine: ApiRuntime, state_dir: Path, *, clock: Clock | None = None, **options: Any
) -> AgentService:
    agent = AgentService(
        engine.db,
        engine.orchestrator,
        engine.environments.context,
        owner=options.pop("owner", "test-agent"),
        state_dir=state_dir,
        clock=clock or Clock(),
        **options,
    )
    MADE.append(agent)
    return agent


def next_work(agent: AgentService) -> Any:
    """What the service loop would claim next from the agent's sources (recovery, plans, claims)."""
    for source in agent.sources:
        work = source.claim()
        if work is not None:
            return work
    return None


def claim(agent: AgentService) -> DeployWork | None:
    """The agent's next batch: its recovery passes and plans due before it run first, as in the loop."""
    while (work := next_work(agent)) is not None:
        if isinstance(work, DeployWork):
            return work
        work.run()
    return None


def run(agent: AgentService, rounds: int = 1000) -> int:
    """Claim and run in this thread until the agent finds nothing to do now; returns the batches run."""
    ran = 0
    while ran < rounds:
        work = claim(agent)
        if work is None:
            return ran
        work.run()
        ran += 1
    raise AssertionError("the agent did not run out of work")


def file(
    path: str, content: str = "x", *, agent: str = "a", requires: Iterable[str] = (), **meta: Any
) -> ResourceRecord:
    attributes: dict[str, Any] = {"agent": agent, "path": path, "content": content, "purged": False}
    if meta:
        attributes["meta"] = meta
    return ResourceRecord(f"test::File[{agent},path={path}]", attributes, tuple(requires))


def export(engine: ApiRuntime, sets: dict[str, list[ResourceRecord]], *, full: bool = False) -> int:
    env_id = engine.context(None).env_id
    kind: Literal["full", "partial"] = (
        "full" if full or engine.store.latest_version(env_id) is None else "partial"
    )
    info = engine.store.export(env_id, ExportRequest(kind=kind, sets=sets))
    return info.number


def status(engine: ApiRuntime, resource_id: str) -> dict[str, Any]:
    with engine.db.read() as session:
        row = (
            session.connection()
            .execute(select(lsm_resource_state).where(lsm_resource_state.c.resource_id == resource_id))
            .one()
        )
        return {k: utc(v) if isinstance(v, datetime) else v for k, v in row._mapping.items()}


def actions(engine: ApiRuntime, resource_id: str) -> list[dict[str, Any]]:
    with engine.db.read() as session:
        rows = session.connection().execute(
            select(lsm_resource_action)
            .where(lsm_resource_action.c.resource_id == resource_id)
            .order_by(lsm_resource_action.c.id)
        )
        return [dict(r._mapping) for r in rows]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
