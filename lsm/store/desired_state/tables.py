"""Desired-state tables: versions, set revisions and resources with validity intervals.

Why this shape: versions of one environment are linear, so instead of copying a whole version
per export, every set revision and every resource row carries the interval of versions that
see it, ``[first_version, superseded_in)`` (``superseded_in`` NULL = still current). Replacing a
set at version v closes its current rows (``superseded_in = v``) and inserts the new ones
(``first_version = v``); sets that did not change are not touched. A partial export therefore
costs what it exports, whatever the size of the rest. Reading version v selects the rows with
``first_version <= v AND (superseded_in IS NULL OR superseded_in > v)``.

These are SQLAlchemy Core tables (on ``SQLModel.metadata``, so ``create_schema`` creates them)
rather than SQLModel classes: the store writes them in bulk (executemany of the statement Core
compiles for ``insert()``, COPY on PostgreSQL for large exports) and never loads ORM
objects. Each index names the query it serves.

Resource attributes and requires are stored as canonical JSON *text*, produced once by the
store (``lsm.desired_state.records.canonical_json``): the same text is hashed, stored and
compared, so nothing is serialized twice and equality is byte equality.

Why the indexes that exports use lead with their key (resource id, set name), not ``env_id``:
PostgreSQL estimates an environment that its statistics do not know yet (a new environment
right after its first bulk load, until autovacuum analyzes the table) at a handful of rows,
and then prefers ANY index that starts with ``env_id`` and scans that environment's whole
range: a 1-set partial export on a large base then cost the whole environment. With the key
first, the keyed plan is the only cheap one, with or without statistics. For the same reason
there is no partial ``WHERE superseded_in IS NULL`` index: without statistics ``IS NULL`` is
estimated at 0.5 %, which made such an index look nearly empty.

The indexes that DO lead with ``env_id`` (reading a whole version, retention) are partial on a
condition that no export query states: ``superseded_in IS NOT NULL`` for retention, and for
reads ``first_version > 0`` (``READ_GUARD``: always true, written only by the read queries).
PostgreSQL and SQLite use a partial index only for a query whose WHERE implies the index's, so
the export plans can not drift to them, and reading one environment's version does not scan
every other environment's rows.

Nothing here may import ``lsm.desired_state``.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    text,
)
from sqlmodel import SQLModel

from lsm.store.database import JsonType

metadata = SQLModel.metadata

#: The condition that lets a query use the ``*_read`` indexes: always true (versions start at
#: 1), stated only by the read queries. Keep it literal: a bound parameter would hide it from
#: PostgreSQL's predicate proof when a generic plan is made.
READ_GUARD_SQL = "first_version > 0"

#: The latest version number per environment. Its row is locked by every export, which
#: serializes exports of one environment (on SQLite the BEGIN IMMEDIATE write lock does it).
ds_head = Table(
    "ds_head",
    metadata,
    Column("env_id", String(36), ForeignKey("lsm_environment.id"), primary_key=True),
    Column("latest", Integer, nullable=False),
)

#: One row per version: its header. ``sets_replaced`` / ``sets_deleted`` are JSON lists of names.
#: ``model_fingerprint``: a full export sets it; a partial one keeps it only when it names the same.
ds_version = Table(
    "ds_version",
    metadata,
    Column("env_id", String(36), primary_key=True),
    Column("number", Integer, primary_key=True, autoincrement=False),
    Column("kind", String(10), nullable=False),
    Column("base", Integer, nullable=True),
    Column("compile_id", String(36), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("sets_replaced", JsonType, nullable=False),
    Column("sets_deleted", JsonType, nullable=False),
    Column("resource_count", Integer, nullable=False),
    # what the version's sets were refined with (``lsm.compiler.incremental``); NULL: unknown or mixed
    Column("model_fingerprint", String(64), nullable=True),
    # how many named sets the version holds (a running count, like resource_count); NULL: unknown
    Column("set_count", Integer, nullable=True),
)

#: One row per revision of a named set (the shared set has none: it is versioned per resource).
ds_set_revision = Table(
    "ds_set_revision",
    metadata,
    Column("name", String(255), nullable=False),
    Column("env_id", String(36), nullable=False),
    Column("first_version", Integer, nullable=False),
    Column("superseded_in", Integer, nullable=True),
    Column("content_hash", String(64), nullable=False),
    Column("resource_count", Integer, nullable=False),
    # "the current revision of these names" (export)
    PrimaryKeyConstraint("name", "env_id", "first_version", name="pk_ds_set_revision"),
    # "the revisions of an environment" (reads, and a full export's current revisions),
    # guarded like ix_ds_resource_read
    Index(
        "ix_ds_set_revision_read",
        "env_id",
        "first_version",
        sqlite_where=text(READ_GUARD_SQL),
        postgresql_where=text(READ_GUARD_SQL),
    ),
    # "the revisions no kept version sees" (retention: superseded_in <= oldest kept), so that
    # retention costs the garbage, not the environment. Partial on closed rows: the exports'
    # "superseded_in IS NULL" can never use it, whatever the statistics say.
    Index(
        "ix_ds_set_revision_closed",
        "env_id",
        "superseded_in",
        sqlite_where=text("superseded_in IS NOT NULL"),
        postgresql_where=text("superseded_in IS NOT NULL"),
    ),
)

#: One row per resource per revision of its set; ``set_name`` "" is the shared set.
ds_resource = Table(
    "ds_resource",
    metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("env_id", String(36), nullable=False),
    Column("resource_id", String, nullable=False),
    Column("set_name", String(255), nullable=False),
    Column("first_version", Integer, nullable=False),
    Column("superseded_in", Integer, nullable=True),
    Column("attributes", Text, nullable=False),
    Column("requires", Text, nullable=False),
    # "the current row of these resource ids" (export rules 1, 4, 5, 6)
    Index("ix_ds_resource_id", "resource_id", "env_id", "superseded_in"),
    # "the rows of these sets" (close on replace, read a set or a revision, GC by dead names)
    Index("ix_ds_resource_set", "set_name", "env_id", "superseded_in"),
    # "the rows of an environment" (reading a whole version). Partial on a condition that is
    # always true but that only reads state (READ_GUARD), so that no export query can use it.
    Index(
        "ix_ds_resource_read",
        "env_id",
        "first_version",
        sqlite_where=text(READ_GUARD_SQL),
        postgresql_where=text(READ_GUARD_SQL),
    ),
)

#: The reverse-requires index of the current shared resources: one row per edge
#: ``requirer_id -> required_id`` of a current shared resource (the only resources that may
#: require a resource of a named set). Why: a partial export that deletes or replaces a set
#: must refuse to leave a stored shared resource requiring what the set no longer holds
#: (docs/semantics.md §4, rule 6), and finding those requirers must cost what the export
#: touches, never the size of the shared set. It holds the latest version only (exports are
#: serialized by ``ds_head``): written with the shared rows, dropped when a full export closes
#: them; history needs no reverse index.
ds_shared_require = Table(
    "ds_shared_require",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("required_id", String, nullable=False),
    Column("requirer_id", String, nullable=False),
    # "which current shared resources require these ids" (the partial export check)
    PrimaryKeyConstraint("required_id", "env_id", "requirer_id", name="pk_ds_shared_require"),
    # "the edges of these requirers" (a full export closing shared resources)
    Index("ix_ds_shared_require_requirer", "requirer_id", "env_id"),
)

__all__ = ["READ_GUARD_SQL", "ds_head", "ds_resource", "ds_set_revision", "ds_shared_require", "ds_version"]
