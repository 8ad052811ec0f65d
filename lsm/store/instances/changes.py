"""Change markers: which instances changed since a full compile last looked at them.

Why: an incremental full compile must find the instances whose live row differs from the
record of their last compile, and comparing all 100,000 rows of an environment costs about a
second even through covering indexes. A marker row per changed instance makes that cost what
changed. The markers are written by the database itself (a trigger on ``lsm_instance``, for
every insert, update and delete), not by Python code, so no writer can forget them: the
orchestration, bulk imports, expert repairs, a benchmark's shortcut.

A marker holds the instance's ``version`` at its last change (``version + 1`` for a deleted
row, a version that never exists). A full compile reads the markers, compares those instances
with their records (``lsm.compiler.incremental``), and in its export transaction removes only
the markers it saw, and only if their version did not move since (``version <= seen``), so a
change that commits meanwhile keeps its marker for the next compile. Markers are hints: the
comparison with the records decides, and a marker left behind costs a keyed lookup.

``install`` makes ``create_all`` create the trigger for new databases; migration 0003 runs
``trigger_statements`` for upgraded ones. Both dialects: SQLite triggers, a PL/pgSQL function.
"""

from __future__ import annotations

from sqlalchemy import DDL, MetaData, event

TABLE = "lsm_instance_change"

_UPSERT = (
    "INSERT INTO lsm_instance_change (env_id, instance_id, version) "
    "VALUES ({row}.env_id, {row}.id, {version}) "
    "ON CONFLICT (env_id, instance_id) DO UPDATE SET version = excluded.version"
)

SQLITE = [
    f"CREATE TRIGGER IF NOT EXISTS lsm_instance_change_{when.lower()} AFTER {when} "
    f"ON lsm_instance FOR EACH ROW BEGIN {_UPSERT.format(row=row, version=version)}; END"
    for when, row, version in (
        ("INSERT", "NEW", "NEW.version"),
        ("UPDATE", "NEW", "NEW.version"),
        ("DELETE", "OLD", "OLD.version + 1"),
    )
]

POSTGRESQL = [
    "CREATE OR REPLACE FUNCTION lsm_instance_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "IF TG_OP = 'DELETE' THEN "
    + _UPSERT.format(row="OLD", version="OLD.version + 1")
    + "; RETURN OLD; END IF; "
    + _UPSERT.format(row="NEW", version="NEW.version")
    + "; RETURN NEW; END $$",
    "DROP TRIGGER IF EXISTS lsm_instance_change ON lsm_instance",
    "CREATE TRIGGER lsm_instance_change AFTER INSERT OR UPDATE OR DELETE ON lsm_instance "
    "FOR EACH ROW EXECUTE FUNCTION lsm_instance_change()",
]


def trigger_statements(dialect: str) -> list[str]:
    """The DDL that installs the trigger on ``dialect`` ("sqlite" or "postgresql")."""
    return SQLITE if dialect == "sqlite" else POSTGRESQL


def install(metadata: MetaData) -> None:
    """Create the trigger whenever ``metadata.create_all`` creates the tables."""
    for dialect, statements in (("sqlite", SQLITE), ("postgresql", POSTGRESQL)):
        for statement in statements:
            ddl = DDL(statement.replace("%", "%%")).execute_if(dialect=dialect)  # type: ignore[no-untyped-call]  # SQLAlchemy's DDL is not typed
            event.listen(metadata, "after_create", ddl)


__all__ = ["POSTGRESQL", "SQLITE", "TABLE", "install", "trigger_statements"]
