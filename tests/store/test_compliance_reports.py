"""Compliance report statements on both backends: parts per agent, claims fenced by owner, the
report done once its last part is, even when two parts finish at the same time (PostgreSQL)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, text

from lsm.schemas.compliance import ReportStatus
from lsm.schemas.deploy import ResourceSelection
from lsm.store.compliance import reports
from lsm.store.compliance.tables import lsm_compliance_report
from lsm.store.database import Database
from tests.deploy.seed import seed_states, state
from tests.waiting import wait_until

ENV = "env-1"
NOW = datetime(2030, 1, 1, tzinfo=UTC)


def seeded(db: Database) -> str:
    seed_states(
        db,
        ENV,
        [
            state("t::R[a1,name=x]"),
            state("t::R[a1,name=y]"),
            state("t::R[a2,name=z]"),
        ],
    )
    with db.write() as session:
        return reports.create_report(session.connection(), ENV, ResourceSelection(), NOW)


def status_of(db: Database, report_id: str) -> str:
    with db.read() as session:
        query = select(lsm_compliance_report.c.status).where(lsm_compliance_report.c.id == report_id)
        return str(session.connection().execute(query).scalar_one())


def take_all(db: Database, owner: str) -> list[reports.ClaimedPart]:
    with db.write() as session:
        conn = session.connection()
        taken = [reports.take_part(conn, row, owner, NOW) for row in reports.open_parts(conn)]
    return [t for t in taken if t is not None]


def item(resource_id: str) -> dict[str, object]:
    return {
        "resource_id": resource_id,
        "resource_type": "t::R",
        "set_name": "",
        "outcome": "in_sync",
        "changes": {},
        "error": None,
    }


def test_a_report_has_one_part_per_agent_and_is_done_after_the_last(db: Database) -> None:
    report_id = seeded(db)
    parts = take_all(db, "me")
    assert sorted((p.agent, p.total) for p in parts) == [("a1", 2), ("a2", 1)]
    assert status_of(db, report_id) == ReportStatus.RUNNING
    first, second = sorted(parts, key=lambda p: p.agent)
    with db.write() as session:
        assert reports.write_items(session.connection(), first, "me", [item("t::R[a1,name=x]")])
        assert reports.finish_part(session.connection(), first, "me", NOW)
    assert status_of(db, report_id) == ReportStatus.RUNNING
    with db.write() as session:
        assert not reports.write_items(
            session.connection(), second, "someone else", [item("t::R[a2,name=z]")]
        )
        assert reports.finish_part(session.connection(), second, "me", NOW)
    assert status_of(db, report_id) == ReportStatus.DONE
    with db.read() as session:
        assert reports.outcome_counts(session.connection(), report_id) == {"in_sync": 1}


def test_a_selection_of_nothing_is_done_at_once(db: Database) -> None:
    seeded(db)
    with db.write() as session:
        report_id = reports.create_report(session.connection(), ENV, ResourceSelection(agents=["none"]), NOW)
    assert status_of(db, report_id) == ReportStatus.DONE
    with db.read() as session:
        assert reports.open_parts(session.connection()) != []  # only the first report's parts


def waiting_on_a_lock(db: Database) -> bool:
    with db.read() as session:
        query = text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return bool(session.connection().execute(query).scalar_one())


def test_two_parts_finishing_at_once_leave_the_report_done(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("a SQLite write transaction is exclusive: no two finish at once")
    report_id = seeded(db)
    first, second = sorted(take_all(db, "me"), key=lambda p: p.agent)
    outcome: list[bool] = []

    def finish_second() -> None:
        with db.write() as session:
            outcome.append(reports.finish_part(session.connection(), second, "me", NOW))

    with db.write() as session:
        assert reports.finish_part(session.connection(), first, "me", NOW)
        thread = threading.Thread(target=finish_second)
        thread.start()
        # the second waits for the report row this transaction holds, then sees its commit
        wait_until(lambda: waiting_on_a_lock(db), "the second finish waits for the report row")
    thread.join(timeout=60)
    assert outcome == [True]
    assert status_of(db, report_id) == ReportStatus.DONE
