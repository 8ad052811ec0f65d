"""Database connections and transactions: SQLite (file, WAL) by default, PostgreSQL by URL.

Why this module exists: every store in the engine needs the same two things, a transaction that
will write and a transaction that only reads, with the right locking on each backend.

* **SQLite** allows one writer at a time. A write transaction starts with ``BEGIN IMMEDIATE`` so
  that the write lock is taken *before* the first read: a read-check-write sequence (the
  ``current_version`` check) is then atomic without row locks, and two writers queue on the
  busy timeout instead of failing with "database is locked" half-way. Reads use plain ``BEGIN``
  and, thanks to WAL, never block on the writer. Two engines share the file for that.
* **PostgreSQL** gives row locks (``SELECT ... FOR UPDATE``), ``SKIP LOCKED`` and advisory
  locks; callers use them through SQLAlchemy. Writes run at READ COMMITTED (row locks make
  read-check-write safe); reads run at REPEATABLE READ so that a read transaction is one snapshot.

Dropped PostgreSQL connections, without a round trip per checkout: ``pool_pre_ping`` sent one
(``;``) before every transaction, a tenth of a partial compile's round trips. Instead a checkout
looks at the pooled connection's socket (``_closed_by_server``: a poll, no round trip): a server
that restarted or terminated the backend has closed it, and the pool replaces it. TCP keepalives
turn a silently lost peer (no FIN, e.g. a dead host or NAT) into a closed socket within about a
minute, ``pool_recycle`` bounds a connection's age, and a connection that dies between the check
and its statement fails that statement as a disconnect: SQLAlchemy then invalidates the whole
pool, so only the transaction in flight sees the error (as with pre-ping, which had the same
window between its ping and the statement).

Bounded pools (PostgreSQL): each process holds at most ``PoolLimits.total`` connections, waits
``PoolLimits.timeout`` for a free one, and its connections name the process, so that a new
process can check the deployment's connection budget at start-up (``lsm.store.pools``).

It must not know any table: tables register themselves on ``SQLModel.metadata``.
"""

from __future__ import annotations

import select
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import JSON, event, exc
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, SQLModel, create_engine

from lsm.store.checkpoint import WRITER_CHECKPOINT_PAGES, Checkpointer
from lsm.store.pools import BudgetUse, PoolConfig, PoolLimits, application_name, check_budget
from lsm.store.write_gate import WriteGate

#: A JSON column: JSONB on PostgreSQL, JSON text on SQLite.
JsonType = JSON().with_variant(JSONB(), "postgresql")

DEFAULT_DATABASE_URL = "sqlite:///./lsm.db"

#: SQLite: how long a statement (and a write transaction's BEGIN) waits for a lock
BUSY_TIMEOUT_S = 60.0
BEGIN_WRITE = "BEGIN IMMEDIATE"
#: the write lock is tried again after these pauses (doubling from the first to the last)
_FIRST_PAUSE_S = 0.0002
_LAST_PAUSE_S = 0.002
_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}

#: a PostgreSQL connection is replaced after this many seconds (server or proxy idle limits)
POOL_RECYCLE_S = 1800
#: libpq TCP keepalives: a peer silent for 30 s is probed every 10 s, given up after 3 probes
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}


def normalize_url(url: str) -> str:
    """Accept ``postgresql://`` and ``postgres://`` and use psycopg 3 for them."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


class Database:
    """One database of the engine: engines, transactions and schema creation.

    ``schema`` (PostgreSQL only) puts every table in that schema; tests use it to give each
    test an empty namespace on a shared server.
    """

    def __init__(
        self,
        url: str = DEFAULT_DATABASE_URL,
        *,
        schema: str | None = None,
        echo: bool = False,
        pools: PoolLimits | None = None,
        role: str = "lsm",
    ):
        self.url = normalize_url(url)
        parsed = make_url(self.url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        self.schema = schema
        self._schema_lock = threading.Lock()
        self._gate = WriteGate() if self.is_sqlite else None
        #: SQLite: WAL checkpoints after commits, outside the write lock (``lsm.store.checkpoint``)
        self.checkpointer: Checkpointer | None = None
        #: PostgreSQL: this process's pool ceiling and the name its connections carry
        #: (``lsm.store.pools``); ``None`` on SQLite
        self.pools: PoolLimits | None = None
        self.application_name: str | None = None
        if self.is_sqlite:
            if parsed.database in (None, "", ":memory:"):
                raise ValueError(
                    "lsm-engine needs a SQLite *file* (WAL); in-memory databases are not supported"
                )
            sqlite_args = {"check_same_thread": False, "timeout": BUSY_TIMEOUT_S, "isolation_level": None}
            self.write_engine = create_engine(self.url, echo=echo, connect_args=sqlite_args)
            self.read_engine = create_engine(self.url, echo=echo, connect_args=sqlite_args)
            _configure_sqlite(self.write_engine, begin=BEGIN_WRITE)
            _configure_sqlite(self.read_engine, begin="BEGIN")
            self.checkpointer = Checkpointer(parsed.database)
        else:
            self.pools = pools or PoolLimits()
            self.application_name = application_name(role, self.pools, schema)
            connect_args: dict[str, Any] = dict(KEEPALIVES, application_name=self.application_name)
            if schema:
                connect_args["options"] = f"-csearch_path={schema}"
            self.write_engine = create_engine(
                self.url,
                echo=echo,
                connect_args=connect_args,
                pool_recycle=POOL_RECYCLE_S,
                **self.pools.engine_options("write"),
            )
            # reads see one snapshot for the whole transaction (a selector walking a tree, a
            # version read back): READ COMMITTED would let a concurrent commit show half-way
            self.read_engine = create_engine(
                self.url,
                echo=echo,
                connect_args=connect_args,
                pool_recycle=POOL_RECYCLE_S,
                isolation_level="REPEATABLE READ",
                **self.pools.engine_options("read"),
            )
            for engine in (self.write_engine, self.read_engine):
                event.listen(engine, "checkout", _replace_closed)

    @property
    def dialect(self) -> str:
        return "sqlite" if self.is_sqlite else "postgresql"

    @contextmanager
    def write(self, *, urgent: bool = False) -> Iterator[Session]:
        """A transaction that may write; committed on success, rolled back on any exception.

        On SQLite the threads of this process take turns at a gate first (``lsm.store.
        write_gate``): only one of them at a time waits for other processes' writers, and
        ``urgent`` writers (someone waits for the answer: the API's group commit) go before
        background ones for a while.
        """
        if self._gate is not None and not self._gate.acquire(urgent=urgent, timeout=BUSY_TIMEOUT_S):
            raise exc.OperationalError(
                "BEGIN IMMEDIATE", None, sqlite3.OperationalError("database is locked")
            )
        try:
            with Session(self.write_engine, expire_on_commit=False, autoflush=False) as session:
                with session.begin():
                    yield session
        finally:
            if self._gate is not None:
                self._gate.release()
        if self.checkpointer is not None:  # committed: its pages go to the database file soon
            self.checkpointer.poke()

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A transaction that only reads (a consistent snapshot on both backends)."""
        with Session(self.read_engine, expire_on_commit=False, autoflush=False) as session:
            with session.begin():
                yield session

    def create_schema(self) -> None:
        """Create or migrate the schema to this release's newest revision (``lsm.store.schema``)."""
        from lsm.store import schema

        with self._schema_lock:
            if self.schema and not self.is_sqlite:
                with self.write_engine.begin() as conn:
                    conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            with self.write_engine.begin() as conn:
                schema.upgrade_schema(conn)

    def check_budget(self, config: PoolConfig) -> BudgetUse | None:
        """PostgreSQL: refuse to start past the deployment's connection budget
        (``lsm.store.pools.check_budget``); SQLite has none."""
        if self.application_name is None:
            return None
        with self.write_engine.connect() as conn:
            return check_budget(conn, self.application_name, config)

    def dispose(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.close()
        self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            self.read_engine.dispose()

    def drop_schema(self) -> None:
        """Drop everything (PostgreSQL test schema, or every table on SQLite)."""
        if self.schema and not self.is_sqlite:
            with self.write_engine.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')
        else:
            SQLModel.metadata.drop_all(self.write_engine)
            with self.write_engine.begin() as conn:
                conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")


def _replace_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Pool checkout: a connection the server closed is replaced (``DisconnectionError`` makes
    the pool discard it and check out another), at the cost of a poll, not a round trip."""
    if _closed_by_server(dbapi_connection):
        raise exc.DisconnectionError("the server closed this pooled connection")


def _closed_by_server(dbapi_connection: Any) -> bool:
    """Whether an idle pooled psycopg connection should be replaced, known without a round trip.

    An idle connection has nothing to read unless the server spoke unasked. Pooled connections
    never LISTEN (``lsm.services.wakeup`` has its own), so that is the server's goodbye (an
    error, then end of file: it restarted or terminated the backend, or the TCP keepalive gave
    up on it), or in rare cases a notice; either way the connection is replaced, which costs a
    reconnect and never a wrong answer.
    """
    pgconn = dbapi_connection.pgconn
    if pgconn.status != 0:  # not CONNECTION_OK
        return True
    try:
        poller = select.poll()
        poller.register(pgconn.socket, select.POLLIN)
        return bool(poller.poll(0))
    except Exception:  # no socket any more (psycopg raises OperationalError)
        return True


def _configure_sqlite(engine: Engine, *, begin: str) -> None:
    """WAL, a busy timeout, foreign keys, the writers' checkpoint threshold, and our own BEGIN
    statement (pysqlite autocommit mode)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        # commits leave the WAL's pages to the checkpointer thread (``lsm.store.checkpoint``);
        # past this many pages a writer still checkpoints itself
        cursor.execute(f"PRAGMA wal_autocheckpoint={WRITER_CHECKPOINT_PAGES}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if begin == BEGIN_WRITE:
            begin_immediate(conn.connection.dbapi_connection, BUSY_TIMEOUT_S)
        else:
            conn.exec_driver_sql(begin)


def begin_immediate(dbapi_connection: Any, timeout: float) -> None:
    """``BEGIN IMMEDIATE`` on a pysqlite connection, waiting for the write lock in short steps.

    Why not SQLite's busy timeout: its handler sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50,
    100, 100 ... ms between tries, so a writer that has waited a while naps up to 100 ms while
    the lock was free after 2. With the API and a worker writing in turn (two processes: group
    commit only helps inside one), those naps were most of both processes' wait. Here the
    handler is off for the BEGIN alone and the lock is tried every 0.2 to 2 ms; every other
    statement keeps the busy timeout (switching ``PRAGMA busy_timeout`` is cheap).
    After ``timeout`` seconds the last "database is locked" error is raised, as SQLite would.
    """
    deadline = time.monotonic() + timeout
    pause = _FIRST_PAUSE_S
    dbapi_connection.execute("PRAGMA busy_timeout=0")
    try:
        while True:
            try:
                dbapi_connection.execute(BEGIN_WRITE)
                return
            except sqlite3.OperationalError as error:
                if error.sqlite_errorcode & 0xFF not in _BUSY or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, _LAST_PAUSE_S)
    finally:
        dbapi_connection.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")


__all__ = ["DEFAULT_DATABASE_URL", "Database", "JsonType", "normalize_url"]
