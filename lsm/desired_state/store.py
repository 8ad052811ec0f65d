"""The desired-state store: versions made of copy-on-write resource sets.

Why it looks like this (see ``lsm.inventory.desired_state_tables`` for the tables): a version
is never copied. Each set revision and each resource row is valid for an interval of versions,
so an export closes the rows of the sets it replaces or deletes and inserts the new ones, and
writes nothing for the rest. A partial export only runs queries keyed by its own set names and
resource ids, through indexes; it never loads the current version. A full export is the whole
desired state, so it may (and does) read every current set revision and shared row, but it
still writes only the sets whose content hash changed and the shared resources that differ.

One export is one write transaction: lock the environment's head row, check every rule
(``lsm.desired_state.merge``), then write. A rejected export raises before its first write, and
the transaction is rolled back, so the previous version stays exactly as it was.

Example::

    store = DesiredStateStore(db)
    store.export(env_id, ExportRequest("full", sets={"net-1": [ResourceRecord("Net[a,id=1]", {})]}))
    store.export(env_id, ExportRequest("partial", sets={"net-2": [ResourceRecord("Net[a,id=2]", {})]}))
    store.content(env_id, 2).sets   # {"net-1": ["Net[a,id=1]"], "net-2": ["Net[a,id=2]"]}

Must not: know how a compile builds its sets (the compiler does), or decide when to collect
garbage (the caller passes the retention it wants).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Table,
    and_,
    delete,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from lsm.desired_state.merge import SHARED, ExportCheck, ExportPlan, StoredResource, StoredRevision
from lsm.desired_state.records import (
    ExportKind,
    ExportRequest,
    ResourceRecord,
    VersionContent,
    VersionInfo,
    decode_record,
)
from lsm.errors import InvalidInput, LsmError, UnknownEnvironment, UnknownVersion
from lsm.inventory.database import Database
from lsm.inventory.desired_state_tables import ds_head, ds_resource, ds_set_revision, ds_version
from lsm.inventory.tables import EnvironmentRow

#: From this many rows on, PostgreSQL receives an insert through COPY.
COPY_THRESHOLD = 1000

#: Longest ``IN (...)`` list sent at once: far below SQLite's and PostgreSQL's parameter limits.
CHUNK = 500

T = TypeVar("T")


def _chunks(values: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]


def _bulk_insert(
    conn: Connection, table: Table, columns: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert many rows in one round: the bulk path of every export.

    The values are plain str/int (JSON is already text), so no SQLAlchemy type processing is
    needed and the rows go to the driver as tuples: ``executemany`` of the statement Core
    compiles for ``insert(table)`` on SQLite (about half the cost of Core's per-dict
    parameter processing), ``COPY`` on PostgreSQL from ``COPY_THRESHOLD`` rows on (several
    times faster than multi-row INSERT), Core executemany below it.
    """
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        if len(rows) < COPY_THRESHOLD:
            conn.execute(insert(table), [dict(zip(columns, row, strict=True)) for row in rows])
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


def _read_guard(table: Table) -> ColumnElement[bool]:
    """``READ_GUARD_SQL``: always true, and what lets a query use a ``*_read`` index.

    Only queries that read a whole environment state it (version reads, a full export reading
    every current revision); the keyed export queries do not, so their plans can not drift to
    an index that leads with ``env_id`` (see ``desired_state_tables``).
    """
    return table.c.first_version > literal_column("0")


def _valid_at(table: Table, number: int) -> ColumnElement[bool]:
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


def _rows_at(env_id: str, number: int, set_name: str | None, *columns: Any) -> Select[Any]:
    """The query for ``(set name, *columns)`` of the resources version ``number`` holds.

    One set goes through the set index, a whole version through ``ix_ds_resource_read`` (the
    environment's rows only; see ``desired_state_tables`` for why that index is guarded).
    """
    r = ds_resource.c
    query = select(r.set_name, *columns).where(r.env_id == env_id, _valid_at(ds_resource, number))
    return query.where(_read_guard(ds_resource)) if set_name is None else query.where(r.set_name == set_name)


class DesiredStateStore:
    """Exports, reads and retention of the desired state of every environment of a database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- export ---------------------------------------------------------------------------------
    def export(self, env_id: str, request: ExportRequest, *, session: Session | None = None) -> VersionInfo:
        """Store one export as the next version of ``env_id`` and return its header.

        Raises ``ExportRuleViolation`` (nothing written), ``InvalidInput`` for a malformed
        request, ``UnknownEnvironment`` when the first export names no known environment.
        With ``session`` the export joins the caller's write transaction (so a compile can
        record its report atomically with its version); otherwise it runs in its own.
        """
        check = ExportCheck(request)  # encoding and the request-only rules: outside the lock
        if session is not None:
            return self._export(session, env_id, check)
        with self._db.write() as own:
            return self._export(own, env_id, check)

    def _export(self, session: Session, env_id: str, check: ExportCheck) -> VersionInfo:
        conn = session.connection()
        latest = self._lock_head(session, env_id, create=check.kind == "full")
        if latest is None:
            check.no_base(env_id)
        plan: ExportPlan
        if check.kind == "full":
            revisions = self._current_revisions(conn, env_id, None)
            plan = check.plan_full(revisions, self._current_shared(conn, env_id))
        else:
            revisions = self._current_revisions(conn, env_id, check.set_names)
            plan = check.plan_partial(revisions, self._current_rows(conn, env_id, check.resource_ids))

        number = (latest or 0) + 1
        previous_count = 0
        if latest is not None:
            previous_count = conn.execute(
                select(ds_version.c.resource_count).where(
                    ds_version.c.env_id == env_id, ds_version.c.number == latest
                )
            ).scalar_one()
        self._write(conn, env_id, number, plan)
        info = VersionInfo(
            number=number,
            kind=check.kind,
            base=latest,
            compile_id=check.request.compile_id,
            created_at=datetime.now(UTC),
            sets_replaced=plan.sets_replaced,
            sets_deleted=plan.sets_deleted,
            resource_count=previous_count - plan.removed_count + plan.added_count,
        )
        conn.execute(
            insert(ds_version).values(
                env_id=env_id,
                number=number,
                kind=info.kind,
                base=info.base,
                compile_id=info.compile_id,
                created_at=info.created_at,
                sets_replaced=info.sets_replaced,
                sets_deleted=info.sets_deleted,
                resource_count=info.resource_count,
            )
        )
        conn.execute(update(ds_head).where(ds_head.c.env_id == env_id).values(latest=number))
        return info

    def _lock_head(self, session: Session, env_id: str, *, create: bool) -> int | None:
        """Lock the environment's head row and return its latest version (None: no version yet).

        Only a full export creates the row; ``INSERT .. ON CONFLICT DO NOTHING`` then the locking
        read makes two first exports racing on PostgreSQL queue up instead of failing.
        """
        conn = session.connection()
        query = select(ds_head.c.latest).where(ds_head.c.env_id == env_id).with_for_update()
        latest = conn.execute(query).scalar_one_or_none()
        if latest is None and create:
            if session.get(EnvironmentRow, env_id) is None:
                raise UnknownEnvironment(f"unknown environment {env_id}", env_id=env_id)
            dialect_insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
            conn.execute(
                dialect_insert(ds_head)
                .values(env_id=env_id, latest=0)
                .on_conflict_do_nothing(index_elements=["env_id"])
            )
            latest = conn.execute(query).scalar_one()
        # 0 is a head created by a first export that its caller's transaction rejected
        return latest or None

    def _current_revisions(
        self, conn: Connection, env_id: str, names: Iterable[str] | None
    ) -> dict[str, StoredRevision]:
        """Current revisions of ``names`` (every current revision when ``names`` is None)."""
        columns = select(
            ds_set_revision.c.name,
            ds_set_revision.c.first_version,
            ds_set_revision.c.content_hash,
            ds_set_revision.c.resource_count,
        ).where(ds_set_revision.c.env_id == env_id, ds_set_revision.c.superseded_in.is_(None))
        queries = (
            [columns.where(_read_guard(ds_set_revision))]  # a full export reads them all
            if names is None
            else [columns.where(ds_set_revision.c.name.in_(chunk)) for chunk in _chunks(sorted(names))]
        )
        return {
            row.name: StoredRevision(row.name, row.first_version, row.content_hash, row.resource_count)
            for query in queries
            for row in conn.execute(query)
        }

    def _current_rows(self, conn: Connection, env_id: str, ids: Iterable[str]) -> dict[str, StoredResource]:
        """The current row of each of ``ids`` that has one (index ``ix_ds_resource_id``)."""
        found: dict[str, StoredResource] = {}
        for chunk in _chunks(sorted(ids)):
            query = select(
                ds_resource.c.resource_id,
                ds_resource.c.set_name,
                ds_resource.c.attributes,
                ds_resource.c.requires,
            ).where(
                ds_resource.c.env_id == env_id,
                ds_resource.c.resource_id.in_(chunk),
                ds_resource.c.superseded_in.is_(None),
            )
            for row in conn.execute(query):
                found[row.resource_id] = StoredResource(
                    row.resource_id, row.set_name, row.attributes, row.requires
                )
        return found

    def _current_shared(self, conn: Connection, env_id: str) -> list[StoredResource]:
        query = select(ds_resource.c.resource_id, ds_resource.c.attributes, ds_resource.c.requires).where(
            ds_resource.c.env_id == env_id,
            ds_resource.c.set_name == SHARED,
            ds_resource.c.superseded_in.is_(None),
        )
        return [
            StoredResource(row.resource_id, SHARED, row.attributes, row.requires)
            for row in conn.execute(query)
        ]

    def _write(self, conn: Connection, env_id: str, number: int, plan: ExportPlan) -> None:
        """Close what the plan replaces, then insert its new rows.

        Closing first means that a resource moving between two replaced sets never has two
        current rows, not even inside the transaction. The closed row count is checked against
        the stored revision counts: a mismatch means a corrupt base, and nothing is built on it.
        """
        closed = 0
        for chunk in _chunks(plan.close_sets):
            conn.execute(
                update(ds_set_revision)
                .where(
                    ds_set_revision.c.env_id == env_id,
                    ds_set_revision.c.name.in_(chunk),
                    ds_set_revision.c.superseded_in.is_(None),
                )
                .values(superseded_in=number)
            )
            closed += conn.execute(
                update(ds_resource)
                .where(
                    ds_resource.c.env_id == env_id,
                    ds_resource.c.set_name.in_(chunk),
                    ds_resource.c.superseded_in.is_(None),
                )
                .values(superseded_in=number)
            ).rowcount
        for chunk in _chunks(plan.close_shared):
            closed += conn.execute(
                update(ds_resource)
                .where(
                    ds_resource.c.env_id == env_id,
                    ds_resource.c.resource_id.in_(chunk),
                    ds_resource.c.set_name == SHARED,
                    ds_resource.c.superseded_in.is_(None),
                )
                .values(superseded_in=number)
            ).rowcount
        if closed != plan.removed_count:
            # the revision counts and the rows disagree: refuse to build on a corrupt base
            raise LsmError(
                f"desired state of environment {env_id} is inconsistent: closed {closed} resources, "
                f"expected {plan.removed_count}",
                env_id=env_id,
            )

        _bulk_insert(
            conn,
            ds_set_revision,
            ("name", "env_id", "first_version", "content_hash", "resource_count"),
            [
                (name, env_id, number, content_hash, len(resources))
                for name, (content_hash, resources) in plan.new_sets.items()
            ],
        )
        rows = [
            (env_id, res.record.id, name, number, res.attributes_json, res.requires_json)
            for name, (_, resources) in plan.new_sets.items()
            for res in resources
        ]
        rows.extend(
            (env_id, res.record.id, SHARED, number, res.attributes_json, res.requires_json)
            for res in plan.new_shared
        )
        _bulk_insert(
            conn,
            ds_resource,
            ("env_id", "resource_id", "set_name", "first_version", "attributes", "requires"),
            rows,
        )

    # -- reading --------------------------------------------------------------------------------
    def latest_version(self, env_id: str) -> int | None:
        """The newest version number of ``env_id``, or None before its first export."""
        with self._db.read() as session:
            latest = (
                session.connection()
                .execute(select(ds_head.c.latest).where(ds_head.c.env_id == env_id))
                .scalar_one_or_none()
            )
        return latest or None

    def list_versions(self, env_id: str, limit: int = 50, offset: int = 0) -> list[VersionInfo]:
        """Version headers, newest first."""
        query = (
            select(ds_version)
            .where(ds_version.c.env_id == env_id)
            .order_by(ds_version.c.number.desc())
            .limit(limit)
            .offset(offset)
        )
        with self._db.read() as session:
            return [_version_info(row) for row in session.connection().execute(query).mappings()]

    def get_version(self, env_id: str, number: int) -> VersionInfo:
        """The header of version ``number``; ``UnknownVersion`` if it does not exist (any more)."""
        with self._db.read() as session:
            return self._get_version(session.connection(), env_id, number)

    def content(self, env_id: str, number: int) -> VersionContent:
        """Which resource ids version ``number`` holds, per set (sorted), and which are shared."""
        sets: dict[str, list[str]] = {}
        shared: list[str] = []
        with self._db.read() as session:
            conn = session.connection()
            for set_name, resource_id in conn.execute(
                _rows_at(env_id, number, None, ds_resource.c.resource_id)
            ):
                (shared if set_name == SHARED else sets.setdefault(set_name, [])).append(resource_id)
            self._get_version(conn, env_id, number)  # after the rows: see _get_version
        for ids in sets.values():
            ids.sort()
        shared.sort()
        return VersionContent(number=number, sets=dict(sorted(sets.items())), shared=shared)

    def resources(
        self, env_id: str, number: int, set_name: str | None = None
    ) -> list[tuple[str | None, ResourceRecord]]:
        """The resources of version ``number`` as ``(set name, record)``, the set None for shared.

        ``set_name`` restricts the answer to one named set. Sorted by set (shared first), then id.
        """
        with self._db.read() as session:
            conn = session.connection()
            columns = (ds_resource.c.resource_id, ds_resource.c.attributes, ds_resource.c.requires)
            found = [
                (name, decode_record(resource_id, attributes, requires))
                for name, resource_id, attributes, requires in conn.execute(
                    _rows_at(env_id, number, set_name, *columns)
                )
            ]
            self._get_version(conn, env_id, number)
        found.sort(key=lambda item: (item[0], item[1].id))
        return [(name or None, record) for name, record in found]

    def set_revisions(self, env_id: str, number: int) -> dict[str, int]:
        """Set name -> ``first_version`` of the revision version ``number`` uses.

        Two versions that map a set to the same number share that revision: the set did not
        change between them (this is how tests prove what an export rewrote).
        """
        query = select(ds_set_revision.c.name, ds_set_revision.c.first_version).where(
            ds_set_revision.c.env_id == env_id,
            _valid_at(ds_set_revision, number),
            _read_guard(ds_set_revision),
        )
        with self._db.read() as session:
            conn = session.connection()
            found = {name: first for name, first in conn.execute(query)}
            self._get_version(conn, env_id, number)
        return found

    def _get_version(self, conn: Connection, env_id: str, number: int) -> VersionInfo:
        """The version row, checked AFTER reading its rows: retention may delete a version
        between two READ COMMITTED statements, and then its rows may have been half read."""
        row = (
            conn.execute(
                select(ds_version).where(ds_version.c.env_id == env_id, ds_version.c.number == number)
            )
            .mappings()
            .one_or_none()
        )
        if row is None:
            raise UnknownVersion(
                f"environment {env_id} has no desired-state version {number}", env_id=env_id, version=number
            )
        return _version_info(row)

    # -- retention ------------------------------------------------------------------------------
    def collect_garbage(self, env_id: str, keep: int) -> int:
        """Keep the newest ``keep`` versions of ``env_id``; return how many versions were deleted.

        A row is garbage when no kept version sees it: ``superseded_in <= oldest kept``. Rows
        are deleted through the set index, per dead set name (plus the shared set), never by
        scanning the environment. Exports may run meanwhile: they only close rows at versions
        newer than every kept one, so they never touch what this deletes.
        """
        if keep < 1:
            raise InvalidInput(f"retention must keep at least one version, not {keep}", keep=keep)
        with self._db.write() as session:
            conn = session.connection()
            oldest_kept = conn.execute(
                select(ds_version.c.number)
                .where(ds_version.c.env_id == env_id)
                .order_by(ds_version.c.number.desc())
                .limit(1)
                .offset(keep - 1)
            ).scalar_one_or_none()
            if oldest_kept is None:
                return 0
            dead_names = list(
                conn.execute(
                    select(ds_set_revision.c.name)
                    .where(ds_set_revision.c.env_id == env_id, ds_set_revision.c.superseded_in <= oldest_kept)
                    .distinct()
                ).scalars()
            )
            for chunk in _chunks([SHARED, *dead_names]):
                conn.execute(
                    delete(ds_resource).where(
                        ds_resource.c.env_id == env_id,
                        ds_resource.c.set_name.in_(chunk),
                        ds_resource.c.superseded_in <= oldest_kept,
                    )
                )
            conn.execute(
                delete(ds_set_revision).where(
                    ds_set_revision.c.env_id == env_id, ds_set_revision.c.superseded_in <= oldest_kept
                )
            )
            deleted = conn.execute(
                delete(ds_version).where(ds_version.c.env_id == env_id, ds_version.c.number < oldest_kept)
            ).rowcount
        return int(deleted)


def _version_info(row: Any) -> VersionInfo:
    created_at: datetime = row["created_at"]
    if created_at.tzinfo is None:  # SQLite keeps no offset; we always store UTC
        created_at = created_at.replace(tzinfo=UTC)
    return VersionInfo(
        number=row["number"],
        kind=cast(ExportKind, row["kind"]),
        base=row["base"],
        compile_id=row["compile_id"],
        created_at=created_at,
        sets_replaced=list(row["sets_replaced"]),
        sets_deleted=list(row["sets_deleted"]),
        resource_count=row["resource_count"],
    )


__all__ = ["DesiredStateStore"]
