"""A fresh, empty database per measurement: a new SQLite file (WAL), PostgreSQL schema or database.

Why: a measurement must not see another one's rows, indexes, free pages or planner
statistics, so every run builds its database from nothing and throws it away afterwards, also
when the run fails. Leaving ``fresh_database`` deletes the SQLite directory or drops the
PostgreSQL schema; callers never clean up themselves.

It must not create tables: ``ApiRuntime.start`` (``lsm.runtime.wiring``) does that, exactly as in production.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from lsm.store.database import Database, normalize_url


def backend_name(database_url: str | None) -> str:
    """``sqlite`` without a URL (a file per run), else the URL's backend (``postgresql``)."""
    if database_url is None:
        return "sqlite"
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


@contextmanager
def fresh_database(database_url: str | None, workdir: Path | None, label: str) -> Iterator[Database]:
    """An empty ``Database``: a SQLite file under ``workdir`` (the system temp directory when
    None) without a URL, a new schema on the server of ``database_url`` with one.

    ``label`` names the file's directory or the schema, so a run left behind by a killed
    process can be recognized (``lsm-bench-<label>-*``, ``bench_<label>_*``).
    """
    if database_url is None or database_url.startswith("sqlite"):
        if workdir is not None:
            workdir.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix=f"lsm-bench-{label}-", dir=workdir))
        db = Database(f"sqlite:///{directory / 'lsm.db'}")
        try:
            yield db
        finally:
            db.dispose()
            shutil.rmtree(directory, ignore_errors=True)
        return
    db = Database(database_url, schema=f"bench_{label}_{uuid.uuid4().hex[:12]}")
    try:
        yield db
    finally:
        try:
            db.drop_schema()
        finally:
            db.dispose()


@contextmanager
def fresh_database_url(database_url: str | None, workdir: Path | None, label: str) -> Iterator[str]:
    """The URL of an empty database for OTHER processes (``lsm server``, ``lsm worker``): a new
    SQLite file without a URL, a new PostgreSQL *database* on the server of ``database_url``.

    Why a database and not a schema (as ``fresh_database`` does): the ``lsm`` command lines take
    a URL only, and a URL can name a database on every driver, while a search path would ride in
    driver-specific query options. Leaving drops the database (``WITH (FORCE)``: a subprocess
    killed mid-transaction may still hold a connection) or deletes the SQLite directory.
    """
    if database_url is None or database_url.startswith("sqlite"):
        if workdir is not None:
            workdir.mkdir(parents=True, exist_ok=True)
        directory = Path(tempfile.mkdtemp(prefix=f"lsm-bench-{label}-", dir=workdir))
        try:
            yield f"sqlite:///{directory / 'lsm.db'}"
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return
    server = make_url(normalize_url(database_url))
    name = f"bench_{label}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            yield server.set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()
