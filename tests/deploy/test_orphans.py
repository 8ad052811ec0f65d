"""No orphans: a resource that leaves the desired state is removed from its target by its handler.

On SQLite and PostgreSQL; desired state written straight to the store, run by agents in the
test's thread on hand-moved clocks (docs/semantics.md §5, "Leaving the desired state").
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import func, select

from lsm.deploy.planner import Planner
from lsm.desired_state.records import ExportRequest, ResourceRecord
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.deploy import DeployRequest
from lsm.store.deploy.tables import lsm_resource_require, lsm_resource_state
from tests.console.ops_fixtures import Pages
from tests.deploy import file_model
from tests.deploy.agents import Clock, actions, agent_for, claim, export, file, run, status

LEASE = 30.0


def engine_with(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    return engine_factory("tests.deploy.file_model")


def rows(engine: ApiRuntime) -> dict[str, tuple[str, bool]]:
    """``{resource_id: (status, is a removal)}`` of every state row."""
    with engine.db.read() as session:
        query = select(
            lsm_resource_state.c.resource_id, lsm_resource_state.c.status, lsm_resource_state.c.removal
        )
        return {r[0]: (r[1], r[2] is not None) for r in session.connection().execute(query)}


def test_a_resource_that_leaves_its_set_is_deleted_from_its_target_and_its_row_goes(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    a, b = file("s/a.conf"), file("s/b.conf")
    export(engine, {"s": [a, b]})
    run(agent)
    assert (state_dir / "s/b.conf").exists()

    export(engine, {"s": [a]})  # the set shrank
    run(agent)

    assert not (state_dir / "s/b.conf").exists() and (state_dir / "s/a.conf").exists()
    assert file_model.CALLS[-1] == ("delete", "s/b.conf")
    assert rows(engine) == {a.id: ("deployed", False)}
    line = actions(engine, b.id)[-1]
    assert (line["action"], line["status"], line["version"]) == ("delete", "deployed", 2)
    assert "left the desired state in version 2" in line["messages"][0]["message"]
    with engine.db.read() as session:
        edges = session.execute(select(func.count()).select_from(lsm_resource_require)).scalar_one()
    assert edges == 0


def test_a_deleted_set_is_removed_after_the_resources_that_required_its_members(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    base = file("n/dir.conf", agent="x")
    mid = file("n/mid.conf", agent="y", requires=[base.id])
    top = file("n/top.conf", agent="z", requires=[mid.id])
    export(engine, {"n": [top, base, mid], "keep": [file("k.conf")]})
    run(agent)
    del file_model.CALLS[:]

    export(engine, {"keep": [file("k.conf")]}, full=True)  # a full compile without set n
    run(agent)

    assert file_model.CALLS == [("delete", "n/top.conf"), ("delete", "n/mid.conf"), ("delete", "n/dir.conf")]
    assert set(rows(engine)) == {file("k.conf").id}


def test_the_orphan_policy_forgets_the_resource_leaves_it_on_its_target_and_says_so(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    kept = file("s/kept.conf", deletion="orphan")
    export(engine, {"s": [file("s/a.conf"), kept]})
    run(agent)

    export(engine, {"s": [file("s/a.conf")]})
    run(agent)

    assert (state_dir / "s/kept.conf").read_text() == "x"
    assert ("delete", "s/kept.conf") not in file_model.CALLS
    assert kept.id not in rows(engine)
    line = actions(engine, kept.id)[-1]
    assert line["action"] == "orphan"
    assert "deletion policy is 'orphan'" in line["messages"][0]["message"]
    assert "left on its target" in line["messages"][0]["message"]


def test_a_removal_and_an_orphan_are_counted_in_the_metrics(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    export(engine, {"s": [file("s/a.conf"), file("s/b.conf", deletion="orphan"), file("s/c.conf")]})
    run(agent)
    export(engine, {"s": [file("s/c.conf")]})
    run(agent)

    text = engine.facades.metrics.exposition(RequestContext.local()).decode()
    counted = {
        sample.labels["action"]: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "lsm_deploy_actions_total"
    }
    assert (counted["create"], counted["delete"], counted["orphan"]) == (3, 1, 1)


def test_a_removal_survives_an_agent_restart_and_a_take_over(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    clock = Clock()
    first = agent_for(engine, state_dir, owner="first", clock=clock, lease_ttl=LEASE)
    export(engine, {"s": [file("s/a.conf"), file("s/b.conf"), file("s/c.conf")]})
    run(first)
    first.stop()

    # planned by an agent that then stops (a restart): the removals are stored, not held in memory
    export(engine, {"s": [file("s/c.conf")]})
    Planner(engine.db).plan(engine.context(None).env_id)
    assert rows(engine)[file("s/a.conf").id] == ("pending", True)
    shown = engine.facades.deploy.get_resource(RequestContext.local(), file("s/a.conf").id)
    assert (shown.status, shown.removal, shown.purged) == ("pending", True, True)
    assert shown.attributes is not None and shown.attributes["path"] == "s/a.conf"

    victim = agent_for(engine, state_dir, owner="victim", clock=clock, lease_ttl=LEASE)
    work = claim(victim)  # claims the removals, then "dies" (kill -9: nobody renews its leases)
    assert work is not None and {c.resource_id for c in work.claimed} == {
        file("s/a.conf").id,
        file("s/b.conf").id,
    }
    assert all(c.removal is not None for c in work.claimed)

    clock.advance(LEASE + 1)
    survivor = agent_for(engine, state_dir, owner="survivor", clock=clock, lease_ttl=LEASE)
    run(survivor)

    assert not (state_dir / "s/a.conf").exists() and not (state_dir / "s/b.conf").exists()
    assert rows(engine) == {file("s/c.conf").id: ("deployed", False)}
    assert [x["agent"] for x in actions(engine, file("s/a.conf").id)] == ["a", "a"]


def test_a_failing_delete_is_retried_under_retry_and_delay(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    clock = Clock()
    agent = agent_for(engine, state_dir, clock=clock)
    flaky = file("s/flaky.conf", retry=3, delay=10)
    export(engine, {"s": [file("s/a.conf"), flaky]})
    run(agent)

    file_model.FAULTS["s/flaky.conf"] = 2  # the next two reads fail
    export(engine, {"s": [file("s/a.conf")]})
    run(agent)
    row = status(engine, flaky.id)
    assert (row["status"], row["attempts"], row["removal"] is not None) == ("pending", 1, True)
    assert (row["next_attempt_at"] - clock.now).total_seconds() == 10
    run(agent)  # not due yet: nothing runs
    assert status(engine, flaky.id)["attempts"] == 1

    clock.advance(10)
    run(agent)
    assert status(engine, flaky.id)["attempts"] == 2
    clock.advance(10)
    run(agent)

    assert flaky.id not in rows(engine)
    assert not (state_dir / "s/flaky.conf").exists()
    assert [x["action"] for x in actions(engine, flaky.id)] == ["create", "error", "error", "delete"]


def test_a_delete_that_keeps_failing_ends_failed_and_holds_back_what_it_required(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    base = file("s/dir.conf")
    leaf = file("s/leaf.conf", requires=[base.id])
    export(engine, {"s": [leaf, base], "t": [file("t.conf")]})
    run(agent)

    file_model.FAULTS["s/leaf.conf"] = -1
    export(engine, {"t": [file("t.conf")]}, full=True)
    run(agent)
    assert rows(engine)[leaf.id] == ("failed", True)
    assert rows(engine)[base.id] == ("skipped", True)  # removed only after what required it
    assert (state_dir / "s/dir.conf").exists()

    file_model.FAULTS.clear()
    engine.facades.deploy.deploy(RequestContext.local(), DeployRequest())  # the operator's retry
    run(agent)
    assert set(rows(engine)) == {file("t.conf").id}
    assert file_model.CALLS[-2:] == [("delete", "s/leaf.conf"), ("delete", "s/dir.conf")]


def test_a_resource_that_comes_back_before_its_removal_ran_cancels_it(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    env_id = engine.context(None).env_id
    back = file("s/back.conf")
    export(engine, {"s": [file("s/a.conf"), back]})
    run(agent)
    calls = len(file_model.CALLS)

    export(engine, {"s": [file("s/a.conf")]})
    Planner(engine.db).plan(env_id)
    assert rows(engine)[back.id] == ("pending", True)
    export(engine, {"s": [file("s/a.conf"), back]})  # back, as it was deployed
    run(agent)

    assert rows(engine)[back.id] == ("deployed", False)
    assert file_model.CALLS[calls:] == []  # neither deleted nor created again
    assert (state_dir / "s/back.conf").exists()


def test_purged_resources_that_leave_are_not_read_again(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    """A purged resource was deleted by its own deploy: leaving the desired state drops its row,
    as before (``purged=True`` keeps its meaning)."""
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    gone = file("s/gone.conf")
    export(engine, {"s": [file("s/a.conf"), gone]})
    run(agent)
    purged = ResourceRecord(gone.id, {**gone.attributes, "purged": True})
    export(engine, {"s": [file("s/a.conf"), purged]})
    run(agent)
    assert file_model.CALLS[-1] == ("delete", "s/gone.conf")
    reads = len(actions(engine, gone.id))

    export(engine, {"s": [file("s/a.conf")]})
    run(agent)
    assert gone.id not in rows(engine)
    assert len(actions(engine, gone.id)) == reads


def test_a_resource_that_never_ran_has_nothing_to_remove(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    env_id = engine.context(None).env_id
    export(engine, {"s": [file("s/a.conf"), file("s/b.conf")]})
    Planner(engine.db).plan(env_id)
    export(engine, {"s": [file("s/a.conf")]})
    result = Planner(engine.db).plan(env_id)
    assert (result.removed, result.removals, result.orphaned) == (1, 0, 0)
    assert set(rows(engine)) == {file("s/a.conf").id}


def test_a_dry_run_reports_the_removals_a_deploy_would_make(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model", config={"state_dir": str(state_dir)})
    agent = agent_for(engine, state_dir)
    export(engine, {"s": [file("s/a.conf"), file("s/b.conf")]})
    run(agent)
    export(engine, {"s": [file("s/a.conf")]})
    Planner(engine.db).plan(engine.context(None).env_id)

    answer = engine.facades.deploy.deploy(RequestContext.local(), DeployRequest(dry_run=True))

    assert {item.id: item.action for item in answer.resources} == {
        file("s/a.conf").id: "none",
        file("s/b.conf").id: "delete",
    }
    assert (state_dir / "s/b.conf").exists()  # only read
    assert rows(engine)[file("s/b.conf").id] == ("pending", True)
    pages = Pages(engine)  # the console marks the removal
    assert "(removal)" in pages.get("/resources").text
    one = pages.get(f"/resources/{quote(file('s/b.conf').id, safe='/')}").text
    assert "left the desired state: being removed from its target" in one


def test_scheduling_the_removal_of_one_shrunk_set_reads_that_set_only(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    export(engine, {f"s{i}": [file(f"s{i}/a.conf"), file(f"s{i}/b.conf")] for i in range(60)}, full=True)
    run(agent)

    export(engine, {"s7": [file("s7/a.conf")]})
    result = Planner(engine.db).plan(engine.context(None).env_id)

    assert (result.full, result.rows_written, result.removed, result.removals) == (False, 1, 1, 1)
    assert result.rows_read == 1 + 2  # the set's current row and the two rows the version closed
    assert result.sets == {"s7"}


def test_a_shared_resource_a_full_compile_no_longer_produces_is_removed(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    env_id = engine.context(None).env_id
    common = file("shared.conf")
    engine.store.export(env_id, ExportRequest(kind="full", sets={"s": [file("s/a.conf")]}, shared=[common]))
    run(agent)
    assert (state_dir / "shared.conf").exists()

    engine.store.export(env_id, ExportRequest(kind="full", sets={"s": [file("s/a.conf")]}, shared=[]))
    run(agent)

    assert not (state_dir / "shared.conf").exists()
    assert [x["action"] for x in actions(engine, common.id)] == ["create", "delete"]


def test_a_noop_removal_is_reported_not_applied(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_with(engine_factory)
    agent = agent_for(engine, state_dir)
    quiet = file("s/quiet.conf")
    export(engine, {"s": [file("s/a.conf"), quiet]})
    run(agent)
    noop = ResourceRecord(quiet.id, {**quiet.attributes, "meta": {"noop": True}})
    export(engine, {"s": [file("s/a.conf"), noop]})  # deployed already: noop finds nothing
    run(agent)

    export(engine, {"s": [file("s/a.conf")]})
    run(agent)

    assert (state_dir / "s/quiet.conf").exists()
    assert rows(engine)[quiet.id] == ("noop_pending", True)
    line = actions(engine, quiet.id)[-1]
    assert (line["action"], line["changes"]) == ("noop", {"purged": {"current": False, "desired": True}})
