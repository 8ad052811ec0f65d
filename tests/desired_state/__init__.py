"""Tests of lsm.desired_state: records, export rules, copy-on-write storage, retention.

The helpers below are shared by the test modules (a package may hold no conftest here):
making environments, building records tersely, taking a snapshot of every desired-state
row (to prove that a rejected export changed nothing) and counting the rows a statement
writes (to prove what an export costs).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, func, select

from lsm.desired_state import ResourceRecord
from lsm.store.database import Database
from lsm.store.desired_state.tables import ds_head, ds_resource, ds_set_revision, ds_version
from lsm.store.tables import EnvironmentRow

TABLES = (ds_head, ds_version, ds_set_revision, ds_resource)


def new_env(db: Database, name: str | None = None) -> str:
    """A fresh environment row (exports need one); returns its id."""
    with db.write() as session:
        row = EnvironmentRow(name=name or f"env-{uuid.uuid4().hex}")
        session.add(row)
        session.flush()
        return row.id


def rec(rid: str, requires: tuple[str, ...] = (), **attributes: Any) -> ResourceRecord:
    """``rec("A", v=1)`` -> ResourceRecord("R[agent,name=A]", {"v": 1}); requires by short name too."""
    return ResourceRecord(rid_of(rid), dict(attributes), tuple(rid_of(r) for r in requires))


def rid_of(short: str) -> str:
    return short if "[" in short else f"R[agent,name={short}]"


def snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every desired-state table, in a stable order."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    with db.read() as session:
        conn = session.connection()
        for table in TABLES:
            columns = [c for c in table.c if c.name != "id"]
            rows = conn.execute(select(*columns)).all()
            found[table.name] = sorted((tuple(row) for row in rows), key=repr)
    return found


def row_counts(db: Database) -> dict[str, int]:
    with db.read() as session:
        conn = session.connection()
        return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one() for t in TABLES}


class WriteCounter:
    """Counts rows written (inserted, updated, deleted) through the write engine.

    It sums ``cursor.rowcount`` of every INSERT / UPDATE / DELETE (executemany included), so
    it sees every write the store makes through SQLAlchemy, whatever the rows are.
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.rows = 0
        self.statements: list[tuple[str, int]] = []

    def _after(
        self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper()
        if verb in ("INSERT", "UPDATE", "DELETE", "COPY"):
            self.rows += cursor.rowcount
            self.statements.append((statement.split("\n", 1)[0][:80], cursor.rowcount))

    @contextmanager
    def counting(self) -> Iterator[WriteCounter]:
        self.rows = 0
        self.statements = []
        event.listen(self.db.write_engine, "after_cursor_execute", self._after)
        try:
            yield self
        finally:
            event.remove(self.db.write_engine, "after_cursor_execute", self._after)
