"""Compliance reports on the agents: drift and missing resources found, nothing changed; a part
of a dead agent process taken over, of a live one left alone; the selection narrows the report.

On SQLite and PostgreSQL; desired state written straight to the store, real files under the
agent's state directory, the agent run in the test's thread (``tests.deploy.agents.run``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import func, select

from lsm.deploy.compliance import ComplianceRuns, ComplianceWork
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from lsm.schemas.compliance import ComplianceOutcome, ComplianceReportOut, ComplianceRequest, ReportStatus
from lsm.store.deploy.tables import lsm_resource_action, lsm_resource_state
from tests.deploy.agents import Clock, agent_for, export, file, run

LOCAL = RequestContext.local()


def rid(path: str, agent: str = "a") -> str:
    return f"test::File[{agent},path={path}]"


def snapshot(engine: ApiRuntime) -> tuple[int, list[tuple[str, str, str | None]]]:
    """The action log's length and every resource's deploy state: what a report must not touch."""
    with engine.db.read() as session:
        conn = session.connection()
        lines = conn.execute(select(func.count()).select_from(lsm_resource_action)).scalar_one()
        t = lsm_resource_state
        rows = conn.execute(select(t.c.resource_id, t.c.status, t.c.deployed_hash).order_by(t.c.resource_id))
        return lines, [(r[0], r[1], r[2]) for r in rows]


def report(
    engine: ApiRuntime, report_id: str, outcome: ComplianceOutcome | None = None
) -> ComplianceReportOut:
    return engine.facades.compliance.report(LOCAL, report_id, outcome=outcome)


def test_a_report_finds_a_drifted_file_and_a_missing_one_and_changes_neither(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    export(engine, {"s1": [file("same.conf", "a"), file("drift.conf", "b"), file("gone.conf", "c")]})
    agent = agent_for(engine, state_dir)
    run(agent)
    (state_dir / "drift.conf").write_text("edited by hand")
    (state_dir / "gone.conf").unlink()
    os.utime(state_dir / "same.conf", (1_000_000, 1_000_000))
    os.utime(state_dir / "drift.conf", (1_000_000, 1_000_000))
    before = snapshot(engine)

    asked = engine.facades.compliance.request(LOCAL, ComplianceRequest())
    assert (asked.status, asked.total, asked.checked) == (ReportStatus.QUEUED, 3, 0)
    run(agent)
    found = report(engine, asked.id)

    assert found.status == ReportStatus.DONE and found.finished_at is not None
    assert (found.total, found.checked) == (3, 3)
    assert found.counts == {
        ComplianceOutcome.DRIFTED: 1,
        ComplianceOutcome.IN_SYNC: 1,
        ComplianceOutcome.MISSING: 1,
    }
    rows = {r.id: r for r in found.resources}
    assert rows[rid("drift.conf")].outcome == ComplianceOutcome.DRIFTED
    assert rows[rid("drift.conf")].changes["content"].model_dump() == {
        "current": "edited by hand",
        "desired": "b",
    }
    assert rows[rid("gone.conf")].outcome == ComplianceOutcome.MISSING
    assert (rows[rid("same.conf")].outcome, rows[rid("same.conf")].changes) == (ComplianceOutcome.IN_SYNC, {})
    assert rows[rid("same.conf")].set == "s1" and rows[rid("same.conf")].agent == "a"
    # nothing changed: files, mtimes, the deploy state and the action log
    assert (state_dir / "drift.conf").read_text() == "edited by hand"
    assert not (state_dir / "gone.conf").exists()
    assert (state_dir / "same.conf").stat().st_mtime == 1_000_000
    assert (state_dir / "drift.conf").stat().st_mtime == 1_000_000
    assert snapshot(engine) == before
    only_drift = report(engine, asked.id, outcome=ComplianceOutcome.DRIFTED)
    assert [r.id for r in only_drift.resources] == [rid("drift.conf")]


def test_a_failing_read_is_an_error_row_and_the_others_are_checked(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    from tests.deploy import file_model

    engine = engine_factory("tests.deploy.file_model")
    export(engine, {"s1": [file("ok.conf"), file("bad.conf")]})
    agent = agent_for(engine, state_dir)
    run(agent)
    file_model.FAULTS["bad.conf"] = -1

    asked = engine.facades.compliance.request(LOCAL, ComplianceRequest())
    run(agent)
    found = report(engine, asked.id)

    assert found.status == ReportStatus.DONE
    assert found.counts == {ComplianceOutcome.ERROR: 1, ComplianceOutcome.IN_SYNC: 1}
    bad = next(r for r in found.resources if r.id == rid("bad.conf"))
    assert bad.error is not None and "injected failure of bad.conf" in bad.error


def test_the_selection_narrows_the_report_by_agent_type_and_set(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    export(
        engine,
        {
            "s1": [file("s1/a.conf"), file("s1/b.conf", agent="b")],
            "s2": [file("s2/a.conf"), file("s2/b.conf", agent="b")],
        },
    )
    agent = agent_for(engine, state_dir)
    run(agent)

    def ids(request: ComplianceRequest) -> list[str]:
        asked = engine.facades.compliance.request(LOCAL, request)
        run(agent)
        found = report(engine, asked.id)
        assert found.status == ReportStatus.DONE and found.checked == found.total
        return [r.id for r in found.resources]

    assert ids(ComplianceRequest(sets=["s2"])) == [rid("s2/a.conf"), rid("s2/b.conf", "b")]
    assert ids(ComplianceRequest(agents=["b"])) == [rid("s1/b.conf", "b"), rid("s2/b.conf", "b")]
    assert ids(ComplianceRequest(agents=["b"], sets=["s1"])) == [rid("s1/b.conf", "b")]
    assert ids(ComplianceRequest(types=["test::Other"])) == []
    assert len(ids(ComplianceRequest(types=["test::File"]))) == 4


def test_a_dead_processs_part_is_taken_over_and_counted_once(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    export(engine, {"s1": [file("x.conf"), file("y.conf")]})
    clock = Clock()
    deployer = agent_for(engine, state_dir, clock=clock, owner="deployer")
    run(deployer)
    asked = engine.facades.compliance.request(LOCAL, ComplianceRequest())
    dead = agent_for(engine, state_dir, clock=clock, owner="dead")  # never renews a presence lease
    work = dead.compliance.claim()
    assert isinstance(work, ComplianceWork)
    assert report(engine, asked.id).status == ReportStatus.RUNNING

    survivor = agent_for(engine, state_dir, clock=clock, owner="survivor")
    survivor.keepalive()  # its presence lease lives
    taken = survivor.compliance.claim()
    assert isinstance(taken, ComplianceWork)
    taken.run()
    work.run()  # the dead one's late run is fenced out: it writes nothing

    found = report(engine, asked.id)
    assert (found.status, found.checked, found.counts) == (
        ReportStatus.DONE,
        2,
        {ComplianceOutcome.IN_SYNC: 2},
    )


def test_a_live_processs_part_is_left_to_it(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    export(engine, {"s1": [file("x.conf")]})
    clock = Clock()
    first = agent_for(engine, state_dir, clock=clock, owner="first")
    run(first)
    first.keepalive()
    asked = engine.facades.compliance.request(LOCAL, ComplianceRequest())
    work = first.compliance.claim()
    assert isinstance(work, ComplianceWork)

    other = agent_for(engine, state_dir, clock=clock, owner="other")
    other.keepalive()
    assert other.compliance.claim() is None
    work.run()
    assert report(engine, asked.id).status == ReportStatus.DONE


def test_a_part_given_back_on_shutdown_is_queued_again(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    export(engine, {"s1": [file("x.conf")]})
    agent = agent_for(engine, state_dir)
    run(agent)
    asked = engine.facades.compliance.request(LOCAL, ComplianceRequest())
    work = agent.compliance.claim()
    assert isinstance(agent.compliance, ComplianceRuns) and work is not None

    agent.compliance.release([work])

    assert report(engine, asked.id).status == ReportStatus.RUNNING  # a part was claimed once
    again = agent_for(engine, state_dir, owner="again")
    run(again)
    assert report(engine, asked.id).status == ReportStatus.DONE
