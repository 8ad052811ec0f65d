"""Scheduling: the planner costs what changed, order follows requires, failures skip dependants.

On SQLite and PostgreSQL; desired state written straight to the store, run by an agent in the
test's thread.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from lsm.deploy.planner import Planner
from lsm.desired_state.records import ResourceRecord
from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy import plan as deploy_plan
from lsm.store.deploy import results as deploy_results
from lsm.store.deploy.tables import lsm_resource_state
from tests.deploy import file_model
from tests.deploy.agents import actions, agent_for, claim, export, file, run, status

SETS = 60


def base(engine: ApiRuntime) -> None:
    export(engine, {f"s{i}": [file(f"s{i}/a.conf"), file(f"s{i}/b.conf")] for i in range(SETS)}, full=True)


def test_a_version_that_changes_one_set_plans_only_that_sets_rows(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    env_id = engine.context(None).env_id
    planner = Planner(engine.db)
    base(engine)
    first = planner.plan(env_id)
    assert (first.full, first.rows_written) == (True, 2 * SETS)

    export(engine, {"s7": [file("s7/a.conf", "changed"), file("s7/c.conf")]})
    second = planner.plan(env_id)

    assert not second.full
    assert second.rows_written == 2  # the set's two current rows
    assert second.rows_read == 2 + 2  # its current rows, and the two rows the version closed
    assert second.removed == 1  # s7/b.conf left the desired state
    assert second.sets == {"s7"}
    with engine.db.read() as session:
        query = select(lsm_resource_state.c.version, func.count()).group_by(lsm_resource_state.c.version)
        versions = {row[0]: row[1] for row in session.connection().execute(query)}
    assert versions == {first.version: 2 * SETS - 2, second.version: 2}
    assert planner.plan(env_id).rows_read == 0  # nothing new: nothing read


def test_only_changed_resources_are_acted_on(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    base(engine)
    run(agent)
    assert len(file_model.CALLS) == 2 * SETS

    export(engine, {"s3": [file("s3/a.conf", "new"), file("s3/b.conf")]})
    run(agent)
    assert file_model.CALLS[2 * SETS :] == [("update", "s3/a.conf")]


def test_a_result_written_while_a_new_version_is_planned_is_not_overwritten(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's result lands between the plan's read of the state rows and its write (on
    PostgreSQL nothing keeps them apart). The plan must work out the row's status from the row
    as it is then: the resource ran the old content, so it is pending for the new one. Computed
    from the read, it stayed ``deploying`` with no holder for ever, and the new content was never
    deployed."""
    engine = engine_factory("tests.deploy.file_model")
    env_id = engine.context(None).env_id
    agent = agent_for(engine, state_dir)
    export(engine, {"s": [file("a.conf", "one")]})
    work = claim(agent)  # plans the first version, claims a.conf (deploying)
    assert work is not None and [c.resource_id for c in work.claimed] == [file("a.conf").id]
    results = agent.runner.execute(env_id, work.claimed, work.records)  # ran, result not written yet
    export(engine, {"s": [file("a.conf", "two")]})

    connections: list[Any] = []
    original_upsert, original_hash = deploy_plan._upsert, deploy_plan.desired_hash

    def upsert(conn: Any, *args: Any, **kwargs: Any) -> int:
        connections.append(conn)
        return original_upsert(conn, *args, **kwargs)

    def desired_hash(attributes_text: str, requires_text: str) -> str:
        if connections and results:  # after the plan read the rows: the result lands now
            deploy_results.write_results(connections[0], env_id, agent.owner, agent.clock(), results)
            results.clear()
        return original_hash(attributes_text, requires_text)

    monkeypatch.setattr(deploy_plan, "_upsert", upsert)
    monkeypatch.setattr(deploy_plan, "desired_hash", desired_hash)
    assert Planner(engine.db).plan(env_id).rows_written == 1
    assert not results, "the result was not written during the plan"
    row = status(engine, file("a.conf").id)
    assert (row["status"], row["claimed_by"]) == ("pending", None)

    monkeypatch.undo()
    run(agent)
    assert status(engine, file("a.conf").id)["status"] == "deployed"
    assert file_model.CALLS[-1] == ("update", "a.conf")


def test_requires_order_across_agents_and_a_failure_skips_dependants_until_it_recovers(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    a = file("a.conf", agent="x")
    b = file("b.conf", agent="y", requires=[a.id])
    c = file("c.conf", agent="z", requires=[b.id])
    file_model.FAULTS["a.conf"] = -1
    export(engine, {"s": [c, b, a]})
    run(agent)
    assert [status(engine, r.id)["status"] for r in (a, b, c)] == ["failed", "skipped", "skipped"]

    file_model.FAULTS.clear()
    export(engine, {"s": [c, b, file("a.conf", "fixed", agent="x")]})  # a new version fixes it
    run(agent)
    assert [status(engine, r.id)["status"] for r in (a, b, c)] == ["deployed"] * 3
    assert [call[1] for call in file_model.CALLS] == ["a.conf", "b.conf", "c.conf"]
    assert [x["action"] for x in actions(engine, c.id)] == ["skip", "create"]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_no_deadlock_over_200_random_resources_with_overlapping_semaphores_and_a_random_dag(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    engine = engine_factory("tests.deploy.file_model")
    state_dir = tmp_path / f"state-{seed}"
    agent = agent_for(engine, state_dir, owner=f"agent-{seed}", threads=8)
    sizes = {f"s{i}": rng.randint(1, 3) for i in range(6)}
    records: list[ResourceRecord] = []
    for n in range(200):
        sema = [f"{name}:{sizes[name]}" for name in rng.sample(sorted(sizes), rng.randint(0, 3))]
        requires = [records[m].id for m in rng.sample(range(n), min(n, rng.randint(0, 3)))]
        records.append(file(f"r{n}.conf", agent=f"ag{rng.randint(0, 4)}", requires=requires, sema=sema))
    file_model.PEAK.clear()
    env = engine.context(None).env_id
    engine.store.export(
        env,
        __import__("lsm.desired_state.records", fromlist=["ExportRequest"]).ExportRequest(
            kind="full", sets={f"e{seed}": records}
        ),
    )
    run(agent, rounds=10_000)

    assert all(status(engine, r.id)["status"] == "deployed" for r in records)
    assert all(file_model.PEAK.get(name, 0) <= size for name, size in sizes.items())
    # the examples share the engine: this one's resources leave the desired state and are removed
    # (each after the resources that required it), so the next example starts from nothing
    export(engine, {}, full=True)
    run(agent, rounds=10_000)
    with engine.db.read() as session:
        assert session.execute(select(func.count()).select_from(lsm_resource_state)).scalar_one() == 0
    agent.stop()
