"""The desired-state store: versions made of copy-on-write resource sets.

Why it looks like this (see ``lsm.store.desired_state.tables`` for the tables): a version
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

import json
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from lsm.desired_state.diff import VersionDiff, version_diff
from lsm.desired_state.merge import SHARED, ExportCheck, ExportPlan
from lsm.desired_state.records import (
    ExportKind,
    ExportRequest,
    ResourceRecord,
    VersionContent,
    VersionInfo,
    decode_record,
)
from lsm.errors import InvalidInput, LsmError, UnknownVersion
from lsm.gc_pause import gc_paused
from lsm.store.database import Database
from lsm.store.desired_state import statements as sql
from lsm.store.desired_state import versions as versions


class DesiredStateStore:
    """Exports, reads and retention of the desired state of every environment of a database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- export ---------------------------------------------------------------------------------
    def prepare(self, request: ExportRequest) -> ExportCheck:
        """Encode ``request`` and check the rules that need no stored state, for ``export``.

        Why apart: a compile exports inside its own write transaction, and encoding every
        record while holding the database's write lock kept the API's writers waiting for
        work that reads nothing stored. Such a caller prepares first, then takes the lock.
        """
        with gc_paused():
            return ExportCheck(request)

    def export(
        self, env_id: str, request: ExportRequest | ExportCheck, *, session: Session | None = None
    ) -> VersionInfo:
        """Store one export as the next version of ``env_id`` and return its header.

        Raises ``ExportRuleViolation`` (nothing written), ``InvalidInput`` for a malformed
        request, ``UnknownEnvironment`` when the first export names no known environment.
        With ``session`` the export joins the caller's write transaction (so a compile can
        record its report atomically with its version); otherwise it runs in its own. A
        rejected export raises before its first write, except that a first full export has
        already created the environment's head row at 0; if the caller commits anyway, that
        row reads as "no version yet" everywhere.
        """
        with gc_paused():
            # encoding and the request-only rules: outside the lock (unless the caller holds it)
            check = request if isinstance(request, ExportCheck) else self.prepare(request)
            if session is not None:
                return self._export(session, env_id, check)
            with self._db.write() as own:
                return self._export(own, env_id, check)

    def _export(self, session: Session, env_id: str, check: ExportCheck) -> VersionInfo:
        conn = session.connection()
        request = check.request
        complete = check.kind == "full" and not request.incremental
        latest = sql.lock_head(session, env_id, create=complete)
        if latest is None:
            check.no_base(env_id)
        if check.autoedge_lookup is not None:  # keyed reads: candidates and what a cycle check reaches
            check.resolve_autoedges(lambda ids: sql.current_rows(conn, env_id, ids))
        plan: ExportPlan
        if complete:
            revisions = sql.current_revisions(conn, env_id, None)
            plan = check.plan_full(revisions, sql.current_shared(conn, env_id))
        elif request.incremental:  # keyed like a partial export, plus the (small) shared set
            revisions = sql.current_revisions(conn, env_id, check.set_names)
            exported = {res.id for res in check.shared} | check.retired_ids
            kept_shared = {
                row.resource_id: json.loads(row.requires_json)
                for row in sql.current_shared(conn, env_id)
                if row.resource_id not in exported
            }
            needed = {required for requires in kept_shared.values() for required in requires}
            rows = sql.current_rows(conn, env_id, check.resource_ids | check.retired_ids | needed)
            plan = check.plan_incremental(revisions, rows, kept_shared)
        else:
            revisions = sql.current_revisions(conn, env_id, check.set_names)
            plan = check.plan_partial(
                revisions,
                sql.current_rows(conn, env_id, check.resource_ids),
                sql.shared_edges_into(conn, env_id, check.set_names),
            )

        number = (latest or 0) + 1
        previous_count = 0
        fingerprint = request.model_fingerprint
        # a complete full export read every current revision: it knows the count outright
        set_count: int | None = len(revisions) if complete else 0
        if latest is not None:
            previous_count, base_fingerprint, base_sets = sql.base_counters(conn, env_id, latest)
            if not complete and base_fingerprint != fingerprint:
                fingerprint = None  # some sets were refined with another model: unknown
            if not complete:
                set_count = base_sets
        if set_count is not None:
            set_count += sum(name not in revisions for name in plan.new_sets) - len(plan.sets_deleted)
        _write_plan(conn, env_id, number, plan)
        info = VersionInfo(
            number=number,
            kind=check.kind,
            base=latest,
            compile_id=check.request.compile_id,
            created_at=datetime.now(UTC),
            sets_replaced=plan.sets_replaced,
            sets_deleted=plan.sets_deleted,
            resource_count=previous_count - plan.removed_count + plan.added_count,
            model_fingerprint=fingerprint,
            set_count=set_count,
        )
        sql.insert_version(
            conn,
            {
                "env_id": env_id,
                "number": number,
                "kind": info.kind,
                "base": info.base,
                "compile_id": info.compile_id,
                "created_at": info.created_at,
                "sets_replaced": info.sets_replaced,
                "sets_deleted": info.sets_deleted,
                "resource_count": info.resource_count,
                "model_fingerprint": info.model_fingerprint,
                "set_count": info.set_count,
            },
        )
        sql.set_head(conn, env_id, number)
        return info

    # -- reading --------------------------------------------------------------------------------
    def latest_version(self, env_id: str) -> int | None:
        """The newest version number of ``env_id``, or None before its first export."""
        with self._db.read() as session:
            return versions.latest_version(session.connection(), env_id)

    def latest_fingerprint(
        self, env_id: str, *, session: Session | None = None
    ) -> tuple[int, str | None] | None:
        """The newest version number of ``env_id`` and its model fingerprint; None before the first.

        Only these two columns: a version header of a large full export carries every set name.
        With ``session`` the read joins the caller's transaction (a compile reads it with its
        selection), otherwise it runs in its own.
        """
        if session is not None:
            row = sql.latest_fingerprint(session.connection(), env_id)
        else:
            with self._db.read() as own:
                row = sql.latest_fingerprint(own.connection(), env_id)
        return None if row is None else (row.number, row.model_fingerprint)

    def list_versions(self, env_id: str, limit: int = 50, offset: int = 0) -> list[VersionInfo]:
        """Version headers, newest first."""
        with self._db.read() as session:
            rows = versions.version_headers(session.connection(), env_id, limit=limit, offset=offset)
        return [_version_info(row) for row in rows]

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
            for set_name, resource_id in versions.resource_ids_at(conn, env_id, number):
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
            found = [
                (name, decode_record(resource_id, attributes, requires))
                for name, resource_id, attributes, requires in versions.resources_at(
                    conn, env_id, number, set_name
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
        with self._db.read() as session:
            conn = session.connection()
            found = versions.revisions_at(conn, env_id, number)
            self._get_version(conn, env_id, number)
        return found

    def diff(self, env_id: str, a: int, b: int) -> VersionDiff:
        """What turns version ``a`` into version ``b``: sets, then resources (``lsm.desired_state.diff``).

        Reads only the sets written or closed between the two versions. ``UnknownVersion``
        names the first of the two that does not exist (any more).
        """
        with self._db.read() as session:
            conn = session.connection()
            found = version_diff(conn, env_id, a, b)
            for number in (a, b):  # after the rows: see _get_version
                self._check_version(conn, env_id, number)
        return found

    @staticmethod
    def _check_version(conn: Connection, env_id: str, number: int) -> None:
        """``UnknownVersion`` unless version ``number`` exists; reads only its key (the header of a
        full export carries every set name in ``sets_replaced``: decoding it costs the version)."""
        if not versions.version_exists(conn, env_id, number):
            raise UnknownVersion(
                f"environment {env_id} has no desired-state version {number}", env_id=env_id, version=number
            )

    def _get_version(self, conn: Connection, env_id: str, number: int) -> VersionInfo:
        """The version row, checked AFTER reading its rows: retention may delete a version
        between two READ COMMITTED statements, and then its rows may have been half read."""
        row = versions.version_header(conn, env_id, number)
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
            return versions.delete_older_than_kept(session.connection(), env_id, keep)


def _write_plan(conn: Connection, env_id: str, number: int, plan: ExportPlan) -> None:
    """Close what the plan replaces, then insert its new rows.

    Closing first means that a resource moving between two replaced sets never has two
    current rows, not even inside the transaction. The closed row count is checked against
    the stored revision counts: a mismatch means a corrupt base, and nothing is built on it.
    """
    closed = sql.close_sets(conn, env_id, number, plan.close_sets)
    closed += sql.close_shared(conn, env_id, number, plan.close_shared)
    if closed != plan.removed_count:
        # the revision counts and the rows disagree: refuse to build on a corrupt base
        raise LsmError(
            f"desired state of environment {env_id} is inconsistent: closed {closed} resources, "
            f"expected {plan.removed_count}",
            env_id=env_id,
        )

    sql.insert_revisions(
        conn,
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
    sql.insert_resources(conn, rows)
    sql.insert_shared_requires(
        conn,
        sorted(
            {(env_id, required, res.record.id) for res in plan.new_shared for required in res.record.requires}
        ),
    )


def _version_info(row: Any) -> VersionInfo:
    """A ``ds_version`` row (a mapping) as the public header."""
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
        model_fingerprint=row.get("model_fingerprint"),
        set_count=row.get("set_count"),
    )


__all__ = ["DesiredStateStore"]
