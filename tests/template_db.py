"""Test databases at the newest schema revision, made from a template instead of from scratch.

Why: most tests need a database at head, and building one the way ``Database.create_schema``
does (``create_all`` table by table with existence checks, then ``alembic stamp``) costs a
round trip per statement, seconds per test on PostgreSQL. The schema is the same for every test,
so it is built once per test process the production way and then reproduced per test:

* SQLite: the template file is copied;
* PostgreSQL: the statements ``create_schema`` sent for the template are recorded and replayed
  in one round trip into the test's own schema (the tables are unqualified: the connection's
  ``search_path`` names the schema, see ``Database``).

A test that tests schema creation or migrations starts from ``tests.conftest.make_database``
(an empty database) instead, so ``create_schema`` itself stays covered.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from sqlalchemy import event

from lsm.store.database import Database

#: the statements of a schema build that make something; the rest are its look-ups
_MAKING = ("CREATE", "ALTER", "DROP", "INSERT", "COMMENT")
_lock = threading.Lock()


def sqlite_at_head(path: Path) -> str:
    """Put a SQLite database at the newest revision at ``path``; its URL."""
    with _lock:
        template = _sqlite_template()
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


def postgres_at_head(url: str) -> Database:
    """A ``Database`` on a new schema of ``url`` at the newest revision."""
    with _lock:
        script = _postgres_script(url)
    database = Database(url, schema=f"t_{uuid.uuid4().hex[:16]}")
    with database.write_engine.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{database.schema}"')
        # psycopg runs a query without parameters as a script, several statements at once
        conn.connection.driver_connection.execute(script)  # type: ignore[union-attr]  # a live psycopg connection here
    return database


@functools.cache
def _sqlite_template() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="lsm-template-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = directory / "lsm.db"
    database = Database(f"sqlite:///{path}")
    try:
        database.create_schema()
    finally:
        database.dispose()
    # the last connection closed checkpointed the WAL: the file alone is the whole database
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return path


@functools.cache
def _postgres_script(url: str) -> str:
    database = Database(url, schema=f"t_{uuid.uuid4().hex[:16]}")
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool) -> None:
        words = statement.split(None, 2)
        if not parameters and words[0].upper() in _MAKING and words[:2] != ["CREATE", "SCHEMA"]:
            statements.append(statement)

    event.listen(database.write_engine, "before_cursor_execute", record)
    try:
        database.create_schema()
    finally:
        event.remove(database.write_engine, "before_cursor_execute", record)
        database.drop_schema()
        database.dispose()
    return ";\n".join(statements)
