"""Schema migrations: a database made by release 0.1.0 upgrades to exactly the schema a new one gets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

from lsm.errors import ConfigurationError
from lsm.store import schema
from lsm.store.database import Database
from lsm.store.tables import CompileRow, EnvironmentRow, EventRow
from tests.conftest import make_database

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def blank(backend: str, tmp_path: Path) -> Iterator[Database]:
    """A database with no tables at all (and, on PostgreSQL, its own empty schema)."""
    database = make_database(backend, tmp_path)
    if not database.is_sqlite:
        with database.write_engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{database.schema}"')
    try:
        yield database
    finally:
        if not database.is_sqlite:
            database.drop_schema()
        database.dispose()


def _release_0_1(database: Database) -> None:
    """Build the schema release 0.1.0 made, with rows in it, as that release left them."""
    lines = (FIXTURES / f"schema_0_1_{database.dialect}.sql").read_text().splitlines()
    ddl = "\n".join(line for line in lines if not line.startswith("--"))
    with database.write_engine.begin() as conn:
        for statement in filter(None, (s.strip() for s in ddl.split(";\n"))):
            conn.exec_driver_sql(statement.rstrip(";"))
        conn.execute(
            text("INSERT INTO lsm_schema_version (id, version, updated_at) VALUES (1, 1, CURRENT_TIMESTAMP)")
        )
        conn.execute(
            text(
                "INSERT INTO lsm_environment (id, name, model, settings, created_at) "
                "VALUES ('env-1', 'default', NULL, '{}', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO lsm_event (env_id, instance_id, version, source, target, trigger, message, "
                "is_error, created_at) VALUES ('env-1', 'i-1', 1, NULL, 'start', 'create', '', false, "
                "CURRENT_TIMESTAMP)"
            )
        )
        for cid, kind, status, report in (
            ("c-waiting", "validation", "queued", {"instance_version": 3, "trigger": "auto", "target": None}),
            ("c-done", "full", "success", {"timings": {"total": 0.1}}),
        ):
            conn.execute(
                text(
                    "INSERT INTO lsm_compile (id, env_id, kind, status, requested_ids, service_entities, "
                    "exclude, instance_id, reason, report, created_at) VALUES (:id, 'env-1', :kind, :status, "
                    "'[]', '[]', '[]', 'i-1', '', :report, CURRENT_TIMESTAMP)"
                ),
                {"id": cid, "kind": kind, "status": status, "report": json.dumps(report)},
            )


def _differences(database: Database) -> list[object]:
    with database.write_engine.connect() as conn:
        return list(compare_metadata(MigrationContext.configure(conn), SQLModel.metadata))


def test_a_new_database_is_created_at_the_newest_revision(blank: Database) -> None:
    blank.create_schema()
    blank.create_schema()  # idempotent: a second process starting finds it done
    with blank.write_engine.connect() as conn:
        assert schema.current_revision(conn) == schema.head_revision()
    assert _differences(blank) == []


def test_a_release_0_1_database_upgrades_to_the_schema_a_new_one_gets(blank: Database) -> None:
    _release_0_1(blank)
    blank.create_schema()
    with blank.write_engine.connect() as conn:
        assert schema.current_revision(conn) == schema.head_revision()
        assert "lsm_schema_version" not in inspect(conn).get_table_names()
    assert _differences(blank) == []
    with blank.read() as session:
        waiting = session.get(CompileRow, "c-waiting")
        done = session.get(CompileRow, "c-done")
        assert waiting is not None and done is not None
        assert waiting.params == {"instance_version": 3, "trigger": "auto", "target": None}
        assert waiting.report == {}
        assert (done.params, done.report) == ({}, {"timings": {"total": 0.1}})
        assert (waiting.attempts, waiting.lease_owner) == (0, None)
        env = session.get(EnvironmentRow, "env-1")
        assert env is not None and env.name == "default"
        event = session.get(EventRow, 1)
        assert event is not None and (event.target, event.actor) == ("start", None)


def test_a_database_from_a_newer_release_is_refused(blank: Database) -> None:
    blank.create_schema()
    with blank.write_engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(ConfigurationError, match="9999"):
        blank.create_schema()


def test_tables_without_a_revision_are_left_alone(blank: Database) -> None:
    with blank.write_engine.begin() as conn:
        SQLModel.metadata.tables["lsm_environment"].create(conn)
    with pytest.raises(ConfigurationError, match="no schema revision"):
        blank.create_schema()


def test_an_upgraded_database_marks_changed_instances_like_a_new_one(blank: Database) -> None:
    """Migration 0003 installs the change-marker trigger that ``create_all`` installs."""
    _release_0_1(blank)
    blank.create_schema()
    with blank.write_engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO lsm_instance (id, env_id, entity, state, version, desired_state_version, "
                "config, deleted, created_at, last_updated) VALUES ('i-9', 'env-1', 'thing', 'up', 4, 0, "
                "'{}', false, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(text("UPDATE lsm_instance SET version = 5 WHERE id = 'i-9'"))
        rows = conn.execute(text("SELECT env_id, instance_id, version FROM lsm_instance_change")).all()
    assert [tuple(row) for row in rows] == [("env-1", "i-9", 5)]


def test_upgrading_from_0003_backfills_the_reverse_requires_index(blank: Database) -> None:
    """A database at 0003 (before the index) with stored desired state gets its shared edges."""
    from alembic import command

    from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
    from lsm.errors import ExportRuleViolation
    from lsm.store.desired_state.tables import ds_shared_require

    blank.create_schema()
    with blank.write_engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO lsm_environment (id, name, settings, created_at) "
                "VALUES ('env-1', 'default', '{}', CURRENT_TIMESTAMP)"
            )
        )
    store = DesiredStateStore(blank)
    x, s, old = "R[a,name=x]", "R[a,name=s]", "R[a,name=old]"
    store.export(
        "env-1",
        ExportRequest("full", sets={"a": [ResourceRecord(x, {})]}, shared=[ResourceRecord(old, {}, (x,))]),
    )
    store.export(
        "env-1",
        ExportRequest(
            "full", sets={"a": [ResourceRecord(x, {})]}, shared=[ResourceRecord(s, {"v": 1}, (x,))]
        ),
    )
    with blank.write_engine.begin() as conn:  # back to 0003, before the index
        config = schema._config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0003")
        assert "ds_shared_require" not in inspect(conn).get_table_names()
    blank.create_schema()
    assert _differences(blank) == []
    with blank.read() as session:
        edges = (
            session.connection()
            .execute(ds_shared_require.select().order_by(ds_shared_require.c.requirer_id))
            .all()
        )
    assert [tuple(e) for e in edges] == [("env-1", x, s)]  # "old" was closed by version 2
    with pytest.raises(ExportRuleViolation):
        store.export("env-1", ExportRequest("partial", deleted_sets=["a"]))


def test_upgrading_from_0008_adds_the_metric_counters_starting_at_zero(blank: Database) -> None:
    """A database at 0008 (before ``/metrics``) gets the counter tables, empty, and they count."""
    from alembic import command

    from lsm.store import metric_counters

    names = {"lsm_metric_compile", "lsm_metric_compile_stage", "lsm_metric_deploy_action"}
    blank.create_schema()
    with blank.write_engine.begin() as conn:  # back to 0008, before the counters
        config = schema._config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0008")
        assert not names & set(inspect(conn).get_table_names())
    blank.create_schema()
    assert _differences(blank) == []
    with blank.write_engine.begin() as conn:
        assert names <= set(inspect(conn).get_table_names())
        assert conn.execute(text("SELECT count(*) FROM lsm_metric_compile")).scalar_one() == 0
        metric_counters.count_compile(conn, "env-1", "full", "success", {"total": 0.5})
        metric_counters.count_compile(conn, "env-1", "full", "success", {"total": 0.25})
        rows = conn.execute(text("SELECT count, seconds FROM lsm_metric_compile_stage")).all()
    assert [tuple(r) for r in rows] == [(2, 0.75)]


def test_upgrading_from_0008_adds_the_webhook_tables_and_the_action_feed_index(blank: Database) -> None:
    """A database at 0008 (before webhooks) gets the webhook tables and ``ix_lsm_resource_action_env``."""
    from alembic import command

    blank.create_schema()
    with blank.write_engine.begin() as conn:  # back to 0008, before webhooks
        config = schema._config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0008")
        assert "lsm_webhook" not in inspect(conn).get_table_names()
        indexes = {i["name"] for i in inspect(conn).get_indexes("lsm_resource_action")}
        assert "ix_lsm_resource_action_env" not in indexes
    blank.create_schema()
    assert _differences(blank) == []
    with blank.write_engine.connect() as conn:
        assert {"lsm_webhook", "lsm_webhook_delivery", "lsm_webhook_attempt"} <= set(
            inspect(conn).get_table_names()
        )


def test_upgrading_to_0012_adds_console_sessions_and_cuts_answers_out_of_the_webhook_log(
    blank: Database,
) -> None:
    """A database at 0010 (before console sessions) gets their table, and the receivers' answers
    its delivery log kept are cut to the status (``HTTP <status>``); other errors stay."""
    from alembic import command

    blank.create_schema()
    with blank.write_engine.begin() as conn:  # back to 0010, before console sessions
        config = schema._config()
        config.attributes["connection"] = conn
        command.downgrade(config, "0010")
        assert "lsm_console_session" not in inspect(conn).get_table_names()
        for n, (code, error) in enumerate(
            [(500, "HTTP 500: password=hunter2"), (None, "ConnectError: refused"), (200, None)]
        ):
            conn.execute(
                text(
                    "INSERT INTO lsm_webhook_attempt (delivery_id, attempted_at, status_code, error, "
                    "duration_ms, sender) VALUES (:d, CURRENT_TIMESTAMP, :code, :error, 1.0, 's')"
                ),
                {"d": f"d{n}", "code": code, "error": error},
            )
    blank.create_schema()
    assert _differences(blank) == []
    with blank.write_engine.connect() as conn:
        assert "lsm_console_session" in inspect(conn).get_table_names()
        rows = conn.execute(text("SELECT error FROM lsm_webhook_attempt ORDER BY delivery_id")).all()
    assert [r[0] for r in rows] == ["HTTP 500", "ConnectError: refused", None]
