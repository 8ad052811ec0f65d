"""Every SQL statement of the desired-state store, and which index each one rides on.

Why a module of its own, in the store layer: the store's cost claims (a partial export costs
what it carries, a read of one environment never visits another) are claims about these
statements, so they are kept together where their indexes (``lsm.store.desired_state.tables``) can be
checked against them. The store (``lsm.desired_state.store``) composes them into transactions.

Must not: decide anything about the rules (``lsm.desired_state.merge`` does), open transactions
(the store does), or import ``lsm.desired_state``: the row shapes the export reads
(``StoredRevision``, ``StoredResource``, ``SharedEdge``) are defined here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Table,
    and_,
    bindparam,
    delete,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from lsm.errors import UnknownEnvironment
from lsm.store.batches import chunks
from lsm.store.desired_state.diff import SHARED_SET
from lsm.store.desired_state.rows import SharedEdge, StoredResource, StoredRevision
from lsm.store.desired_state.tables import (
    ds_head,
    ds_resource,
    ds_set_revision,
    ds_shared_require,
    ds_version,
)
from lsm.store.tables import EnvironmentRow

#: From this many rows on, PostgreSQL receives an insert through COPY.
COPY_THRESHOLD = 1000

#: Longest ``IN (...)`` list sent at once: far below SQLite's and PostgreSQL's parameter limits.

T = TypeVar("T")


_INSERTS: dict[str, Any] = {}


def _insert_of(table: Table) -> Any:
    """``insert(table)``, built once per table."""
    found = _INSERTS.get(table.key)
    if found is None:
        found = _INSERTS[table.key] = insert(table)
    return found


def bulk_insert(
    conn: Connection, table: Table, columns: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert many rows in one round: the bulk path of every export.

    The values are plain str/int (JSON is already text), so no SQLAlchemy type processing is
    needed and the rows go to the driver as tuples: ``executemany`` of the statement Core
    compiles for ``insert(table)`` on SQLite (cheaper than Core's per-dict parameter
    processing), ``COPY`` on PostgreSQL from ``COPY_THRESHOLD`` rows on (far cheaper than
    multi-row INSERT), Core executemany below it.
    """
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        if len(rows) < COPY_THRESHOLD:
            conn.execute(_insert_of(table), [dict(zip(columns, row, strict=True)) for row in rows])
            return
        quote = conn.dialect.identifier_preparer.quote
        target = f"{conn.dialect.identifier_preparer.format_table(table)} ({', '.join(map(quote, columns))})"
        dbapi_connection: Any = conn.connection.dbapi_connection
        with dbapi_connection.cursor() as cursor, cursor.copy(f"COPY {target} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    statement = insert(table).compile(dialect=conn.dialect, column_keys=list(columns))
    if statement.positiontup != list(columns):  # a programming error, caught by every test
        raise ValueError(f"columns must be given in table order: {statement.positiontup}")
    conn.exec_driver_sql(str(statement), rows)


def read_guard(table: Table) -> ColumnElement[bool]:
    """``READ_GUARD_SQL``: always true, and what lets a query use a ``*_read`` index.

    Only queries that read a whole environment state it (version reads, a full export reading
    every current revision); the keyed export queries do not, so their plans can not drift to
    an index that leads with ``env_id`` (see ``lsm.store.desired_state.tables``).
    """
    return table.c.first_version > literal_column("0")


def valid_at(table: Table, number: int) -> ColumnElement[bool]:
    """Rows that version ``number`` sees: ``first_version <= n < superseded_in``.

    Always the full predicate, also for the latest version: on PostgreSQL a read transaction
    is READ COMMITTED, and an export committing between two statements closes rows that the
    version being read still sees (their ``superseded_in`` becomes n + 1), which
    ``superseded_in IS NULL`` would miss.
    """
    return and_(
        table.c.first_version <= number,
        or_(table.c.superseded_in.is_(None), table.c.superseded_in > number),
    )


def rows_at(env_id: str, number: int, set_name: str | None, *columns: Any) -> Select[Any]:
    """The query for ``(set name, *columns)`` of the resources version ``number`` holds.

    One set goes through the set index, a whole version through ``ix_ds_resource_read`` (the
    environment's rows only; see ``lsm.store.desired_state.tables`` for why that index is guarded).
    """
    r = ds_resource.c
    query = select(r.set_name, *columns).where(r.env_id == env_id, valid_at(ds_resource, number))
    return query.where(read_guard(ds_resource)) if set_name is None else query.where(r.set_name == set_name)


_ENV = bindparam("b_env", type_=ds_head.c.env_id.type)
_NUMBER = bindparam("b_number", type_=ds_head.c.latest.type)

#: the statements of a partial export, built once (construction and cache key cost more than
#: some of them take on the server); ``b_*`` are their bind parameters
_LOCK_HEAD = select(ds_head.c.latest).where(ds_head.c.env_id == _ENV).with_for_update()
_REVISIONS = select(
    ds_set_revision.c.name,
    ds_set_revision.c.first_version,
    ds_set_revision.c.content_hash,
    ds_set_revision.c.resource_count,
).where(ds_set_revision.c.env_id == _ENV, ds_set_revision.c.superseded_in.is_(None))
_REVISIONS_NAMED = _REVISIONS.where(ds_set_revision.c.name.in_(bindparam("b_names", expanding=True)))
_CURRENT_ROWS = select(
    ds_resource.c.resource_id,
    ds_resource.c.set_name,
    ds_resource.c.attributes,
    ds_resource.c.requires,
).where(
    ds_resource.c.env_id == _ENV,
    ds_resource.c.resource_id.in_(bindparam("b_ids", expanding=True)),
    ds_resource.c.superseded_in.is_(None),
)
_SHARED_EDGES = (
    select(ds_shared_require.c.requirer_id, ds_shared_require.c.required_id, ds_resource.c.set_name)
    .select_from(
        ds_resource.join(ds_shared_require, ds_shared_require.c.required_id == ds_resource.c.resource_id)
    )
    .where(
        ds_resource.c.set_name.in_(bindparam("b_names", expanding=True)),
        ds_resource.c.env_id == _ENV,
        ds_resource.c.superseded_in.is_(None),
        ds_shared_require.c.env_id == _ENV,
    )
)
_CLOSE_REVISIONS = (
    update(ds_set_revision)
    .where(
        ds_set_revision.c.env_id == _ENV,
        ds_set_revision.c.name.in_(bindparam("b_names", expanding=True)),
        ds_set_revision.c.superseded_in.is_(None),
    )
    .values(superseded_in=_NUMBER)
)
_CLOSE_SET_ROWS = (
    update(ds_resource)
    .where(
        ds_resource.c.env_id == _ENV,
        ds_resource.c.set_name.in_(bindparam("b_names", expanding=True)),
        ds_resource.c.superseded_in.is_(None),
    )
    .values(superseded_in=_NUMBER)
)
_BASE_COUNTERS = select(
    ds_version.c.resource_count, ds_version.c.model_fingerprint, ds_version.c.set_count
).where(ds_version.c.env_id == _ENV, ds_version.c.number == _NUMBER)
_INSERT_VERSION = insert(ds_version)
_SET_HEAD = update(ds_head).where(ds_head.c.env_id == _ENV).values(latest=_NUMBER)


_LATEST_FINGERPRINT = (
    select(ds_version.c.number, ds_version.c.model_fingerprint)
    .join(ds_head, (ds_head.c.env_id == ds_version.c.env_id) & (ds_head.c.latest == ds_version.c.number))
    .where(ds_version.c.env_id == _ENV)
)


def latest_fingerprint(conn: Connection, env_id: str) -> Any:
    """The latest version's ``(number, model_fingerprint)`` row of ``env_id``, or None."""
    return conn.execute(_LATEST_FINGERPRINT, {"b_env": env_id}).one_or_none()


def lock_head(session: Session, env_id: str, *, create: bool) -> int | None:
    """Lock the environment's head row and return its latest version (None: no version yet).

    Only a full export creates the row; ``INSERT .. ON CONFLICT DO NOTHING`` then the locking
    read makes two first exports racing on PostgreSQL queue up instead of failing.
    """
    conn = session.connection()
    latest = conn.execute(_LOCK_HEAD, {"b_env": env_id}).scalar_one_or_none()
    if latest is None and create:
        if session.get(EnvironmentRow, env_id) is None:
            raise UnknownEnvironment(f"unknown environment {env_id}", env_id=env_id)
        dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
        conn.execute(
            dialect_insert(ds_head)
            .values(env_id=env_id, latest=0)
            .on_conflict_do_nothing(index_elements=["env_id"])
        )
        latest = conn.execute(_LOCK_HEAD, {"b_env": env_id}).scalar_one()
    # 0 is a head created by a first export that its caller's transaction rejected
    return latest or None


def base_counters(conn: Connection, env_id: str, number: int) -> tuple[int, str | None, int | None]:
    """``resource_count, model_fingerprint, set_count`` of version ``number`` (it must exist)."""
    resource_count, fingerprint, set_count = conn.execute(
        _BASE_COUNTERS, {"b_env": env_id, "b_number": number}
    ).one()
    return resource_count, fingerprint, set_count


def insert_version(conn: Connection, values: dict[str, Any]) -> None:
    """The ``ds_version`` row of a new version."""
    conn.execute(_INSERT_VERSION, values)


def set_head(conn: Connection, env_id: str, number: int) -> None:
    """Point the (locked) head row of ``env_id`` at version ``number``."""
    conn.execute(_SET_HEAD, {"b_env": env_id, "b_number": number})


def current_revisions(
    conn: Connection, env_id: str, names: Iterable[str] | None
) -> dict[str, StoredRevision]:
    """Current revisions of ``names`` (every current revision when ``names`` is None)."""
    if names is None:  # a full export reads them all
        results = [conn.execute(_REVISIONS.where(read_guard(ds_set_revision)), {"b_env": env_id})]
    else:
        results = [
            conn.execute(_REVISIONS_NAMED, {"b_env": env_id, "b_names": chunk})
            for chunk in chunks(sorted(names))
        ]
    return {
        row.name: StoredRevision(row.name, row.first_version, row.content_hash, row.resource_count)
        for result in results
        for row in result
    }


def current_rows(conn: Connection, env_id: str, ids: Iterable[str]) -> dict[str, StoredResource]:
    """The current row of each of ``ids`` that has one (index ``ix_ds_resource_id``)."""
    found: dict[str, StoredResource] = {}
    for chunk in chunks(sorted(ids)):
        for row in conn.execute(_CURRENT_ROWS, {"b_env": env_id, "b_ids": chunk}):
            found[row.resource_id] = StoredResource(
                row.resource_id, row.set_name, row.attributes, row.requires
            )
    return found


def shared_edges_into(conn: Connection, env_id: str, names: Iterable[str]) -> list[SharedEdge]:
    """Edges from current shared resources into the current rows of the sets ``names``.

    The rows of those sets come through ``ix_ds_resource_set``, their requirers through the
    primary key of ``ds_shared_require`` (keyed by the required id): the cost is the size of
    the touched sets, whatever the size of the shared set or of the environment.
    """
    found: list[SharedEdge] = []
    for chunk in chunks(sorted(names)):
        found.extend(
            SharedEdge(row.requirer_id, row.required_id, row.set_name)
            for row in conn.execute(_SHARED_EDGES, {"b_env": env_id, "b_names": chunk})
        )
    return found


def current_shared(conn: Connection, env_id: str) -> list[StoredResource]:
    """Every current shared row (a full export replaces the shared set wholly)."""
    query = select(ds_resource.c.resource_id, ds_resource.c.attributes, ds_resource.c.requires).where(
        ds_resource.c.env_id == env_id,
        ds_resource.c.set_name == SHARED_SET,
        ds_resource.c.superseded_in.is_(None),
    )
    return [
        StoredResource(row.resource_id, SHARED_SET, row.attributes, row.requires)
        for row in conn.execute(query)
    ]


def close_sets(conn: Connection, env_id: str, number: int, names: list[str]) -> int:
    """Close the current revisions and rows of the sets ``names`` at version ``number``; the
    number of resource rows closed."""
    closed = 0
    for chunk in chunks(names):
        params = {"b_env": env_id, "b_names": chunk, "b_number": number}
        conn.execute(_CLOSE_REVISIONS, params)
        closed += conn.execute(_CLOSE_SET_ROWS, params).rowcount
    return closed


def close_shared(conn: Connection, env_id: str, number: int, ids: list[str]) -> int:
    """Close the current shared rows ``ids`` (and drop their requirement edges) at version
    ``number``; the number of rows closed."""
    closed = 0
    for chunk in chunks(ids):
        conn.execute(
            delete(ds_shared_require).where(
                ds_shared_require.c.requirer_id.in_(chunk), ds_shared_require.c.env_id == env_id
            )
        )
        closed += conn.execute(
            update(ds_resource)
            .where(
                ds_resource.c.env_id == env_id,
                ds_resource.c.resource_id.in_(chunk),
                ds_resource.c.set_name == SHARED_SET,
                ds_resource.c.superseded_in.is_(None),
            )
            .values(superseded_in=number)
        ).rowcount
    return closed


#: the columns of the rows ``insert_revisions`` / ``insert_resources`` / ``insert_shared_requires`` take
REVISION_COLUMNS = ("name", "env_id", "first_version", "content_hash", "resource_count")
RESOURCE_COLUMNS = ("env_id", "resource_id", "set_name", "first_version", "attributes", "requires")
SHARED_REQUIRE_COLUMNS = ("env_id", "required_id", "requirer_id")


def insert_revisions(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    bulk_insert(conn, ds_set_revision, REVISION_COLUMNS, rows)


def insert_resources(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    bulk_insert(conn, ds_resource, RESOURCE_COLUMNS, rows)


def insert_shared_requires(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    bulk_insert(conn, ds_shared_require, SHARED_REQUIRE_COLUMNS, rows)
