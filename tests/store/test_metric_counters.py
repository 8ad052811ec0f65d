"""The ``/metrics`` counters equal what they count, however the batches that bump them are cut,
on both backends (``lsm.store.metric_counters``)."""

from __future__ import annotations

import uuid
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from lsm.store import metric_counters
from lsm.store.database import Database
from lsm.store.metric_counters import lsm_metric_compile_stage, lsm_metric_deploy_action

ACTION = st.fixed_dictionaries(
    {
        "agent": st.sampled_from(["a1", "a2"]),
        "resource_id": st.sampled_from(["std::File[a1,path=/x]", "net::Port[r1,name=eth0]", "x[y,z=1]"]),
        "action": st.sampled_from(["create", "update", "error", "skip", "read"]),
        "dry_run": st.booleans(),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(ACTION, max_size=8), max_size=5))
def test_action_counters_equal_the_non_dry_run_actions_of_every_batch(
    db: Database, batches: list[list[dict[str, object]]]
) -> None:
    env_id = uuid.uuid4().hex  # each example counts in an environment of its own
    for batch in batches:  # one transaction per batch, like an agent's results
        with db.write() as session:
            metric_counters.count_actions(session.connection(), env_id, batch)
    t = lsm_metric_deploy_action
    with db.read() as session:
        rows = session.connection().execute(
            select(t.c.agent, t.c.resource_type, t.c.action, t.c.count).where(t.c.env_id == env_id)
        )
        counted = {(r[0], r[1], r[2]): r[3] for r in rows}
    expected = Counter(
        (str(a["agent"]), str(a["resource_id"]).split("[", 1)[0], str(a["action"]))
        for batch in batches
        for a in batch
        if not a["dry_run"]
    )
    assert counted == dict(expected)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    compiles=st.lists(
        st.dictionaries(st.sampled_from(["select", "refine_total", "export", "total"]), st.floats(0, 100)),
        max_size=6,
    )
)
def test_stage_sums_and_counts_add_up_over_compiles(db: Database, compiles: list[dict[str, float]]) -> None:
    env_id = uuid.uuid4().hex
    for timings in compiles:
        with db.write() as session:
            metric_counters.count_compile(session.connection(), env_id, "partial", "success", timings)
    t = lsm_metric_compile_stage
    with db.read() as session:
        rows = session.connection().execute(
            select(t.c.stage, t.c.count, t.c.seconds).where(t.c.env_id == env_id)
        )
        counted = {r[0]: (r[1], r[2]) for r in rows}
    assert set(counted) == {stage for timings in compiles for stage in timings}
    for stage, (count, seconds) in counted.items():
        values = [timings[stage] for timings in compiles if stage in timings]
        assert count == len(values)
        assert abs(seconds - sum(values)) <= 1e-6 * max(1.0, sum(values))
