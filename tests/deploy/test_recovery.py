"""Nothing is stranded by a dead or stalled holder: claims are taken back, feedback is finished.

In the test's thread on SQLite and PostgreSQL, with agents on hand-moved clocks: a "dead" agent
is one whose presence lease the clock left behind (as after kill -9 on another host). The
orders compile (the loop drains without an agent), then the agents claim and run by hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from lsm.deploy.agent import AgentService
from lsm.runtime.wiring import ApiRuntime
from lsm.store import leases
from lsm.store.deploy import claims as deploy_claims
from lsm.store.deploy import feedback as deploy_feedback
from lsm.store.deploy.tables import lsm_deploy_feedback, lsm_resource_state
from tests.deploy.agents import Clock, agent_for, claim, run
from tests.deploy.conftest import get, order

LEASE = 30.0


def compiled(engine_factory: Callable[..., ApiRuntime], routers: int) -> tuple[ApiRuntime, list[str]]:
    """An engine whose orders are compiled and planned-to-be-deployed, no agent having run."""
    engine = engine_factory("tests.deploy.file_model")
    ids = [order(engine, "router", {"name": f"r{i}"}).id for i in range(routers)]
    engine.processing.drain()
    return engine, ids


def rows(engine: ApiRuntime) -> Counter[tuple[str, str | None]]:
    with engine.db.read() as session:
        query = select(lsm_resource_state.c.status, lsm_resource_state.c.claimed_by)
        return Counter((r[0], r[1]) for r in session.connection().execute(query))


def states(engine: ApiRuntime, ids: list[str]) -> Counter[str]:
    return Counter(get(engine, "router", i).state for i in ids)


def pending_feedback(engine: ApiRuntime) -> int:
    with engine.db.read() as session:
        return int(session.execute(select(func.count()).select_from(lsm_deploy_feedback)).scalar_one())


def agent(engine: ApiRuntime, state_dir: Path, owner: str, clock: Clock) -> AgentService:
    return agent_for(engine, state_dir, owner=owner, clock=clock, lease_ttl=LEASE)


def test_claims_of_a_dead_holder_are_taken_back_and_deployed_by_the_next(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, ids = compiled(engine_factory, 3)
    clock = Clock()
    victim = agent(engine, state_dir, "victim", clock)
    work = claim(victim)
    assert work is not None and len(work.claimed) == 3  # claimed, then the victim "dies"
    assert rows(engine) == Counter({("deploying", "victim"): 3})

    clock.advance(LEASE + 1)  # its leases expire: nobody renews them
    survivor = agent(engine, state_dir, "survivor", clock)
    assert run(survivor) >= 1

    assert rows(engine) == Counter({("deployed", None): 3})
    assert states(engine, ids) == Counter({"up": 3})
    assert pending_feedback(engine) == 0


def test_a_live_holders_claims_are_left_to_it_and_its_own_stale_ones_are_re_examined(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, ids = compiled(engine_factory, 2)
    clock = Clock()
    holder = agent(engine, state_dir, "holder", clock)
    other = agent(engine, state_dir, "other", clock)
    work = claim(holder)
    assert work is not None
    holder.claiming.done(work)  # a batch that ended without its results or a give-back (a failure)

    clock.advance(LEASE + 1)
    with engine.db.write() as session:  # the holder lives on: its keepalive renews its presence
        leases.acquire(session, "agent-process:holder", "holder", now=clock(), ttl=LEASE, info={})
    other.recover()
    assert rows(engine) == Counter({("deploying", "holder"): 2})  # a live holder's: untouched

    holder.recover()  # its own claims, older than the lease, that no batch of it runs
    assert rows(engine) == Counter({("pending", None): 2})
    run(holder)
    assert states(engine, ids) == Counter({"up": 2})


def test_feedback_interrupted_after_the_results_is_finished_by_the_next_agent_not_the_repair(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, ids = compiled(engine_factory, 4)
    clock = Clock()
    victim = agent(engine, state_dir, "victim", clock)
    work = claim(victim)
    assert work is not None
    results = victim.runner.execute(work.env_id, work.claimed, work.records)
    work.write(results)  # the results commit; the process dies before the feedback
    assert rows(engine) == Counter({("deployed", None): 4})
    assert states(engine, ids) == Counter({"creating": 4})
    assert pending_feedback(engine) == 1

    clock.advance(LEASE + 1)
    survivor = agent(engine, state_dir, "survivor", clock)
    assert claim(survivor) is None  # nothing to deploy, but its start ran the recovery pass
    assert states(engine, ids) == Counter({"up": 4})
    assert pending_feedback(engine) == 0


def test_a_release_gives_back_only_its_owners_claims_in_lock_order(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine, _ids = compiled(engine_factory, 2)
    clock = Clock()
    first = agent(engine, state_dir, "first", clock)
    work = claim(first)
    assert work is not None
    claimed = [c.resource_id for c in work.claimed]
    with engine.db.write() as session:
        assert deploy_claims.release_claims(session.connection(), work.env_id, "someone-else", claimed) == 0
    assert rows(engine) == Counter({("deploying", "first"): 2})
    assert first.claiming.give_back(work.env_id, list(reversed(claimed))) == 2
    assert rows(engine) == Counter({("pending", None): 2})
    with engine.db.read() as session:
        assert deploy_feedback.pending(session.connection()) == []


def test_names_are_leased_in_name_order_and_processes_prefer_different_ones(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    env_id = engine.context(None).env_id
    names = {(env_id, f"ag{i}") for i in range(10)}
    taken: list[str] = []
    acquire = leases.acquire

    def recording(session: Any, name: str, owner: str, **kwargs: Any) -> Any:
        taken.append(name)
        return acquire(session, name, owner, **kwargs)

    monkeypatch.setattr(leases, "acquire", recording)
    clock = Clock()
    first, second = (agent(engine, state_dir, owner, clock) for owner in ("agent@host:1", "agent@host:2"))
    with engine.db.write() as session:  # two live processes: each takes its share, half
        leases.acquire(session, "agent-process:agent@host:2", "agent@host:2", now=clock(), ttl=LEASE, info={})
    taken.clear()
    first.names.take(names)

    assert taken[0] == "agent-process:agent@host:1"  # the global order: presence, then names
    assert taken[1:] == sorted(taken[1:]) and len(taken) == 6
    assert len(first.names.held) == 5
    preferred = {tuple(sorted(names, key=p)[:5]) for p in (first.names.preference, second.names.preference)}
    assert len(preferred) == 2  # the two processes would start from different names
