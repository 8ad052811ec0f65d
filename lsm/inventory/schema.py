"""Schema creation and versioning.

Why: a later release must be able to tell which schema a database carries and migrate it in
place. ``SCHEMA_VERSION`` is bumped with every change to a table; ``MIGRATIONS`` maps a version
to the function that brings a database from that version to the next one.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import Session

from lsm.errors import ConfigurationError
from lsm.inventory import desired_state_tables, tables  # noqa: F401  (registers the tables)
from lsm.inventory.tables import SchemaVersion, utcnow

SCHEMA_VERSION = 1

#: version N -> function migrating a database at version N to N + 1, in the same transaction.
MIGRATIONS: dict[int, Callable[[Session], None]] = {}


def record_schema_version(session: Session) -> int:
    """Stamp a new database, or migrate an older one step by step; refuse a newer one."""
    row = session.get(SchemaVersion, 1, with_for_update=True)
    if row is None:
        session.add(SchemaVersion(id=1, version=SCHEMA_VERSION))
        return SCHEMA_VERSION
    if row.version > SCHEMA_VERSION:
        raise ConfigurationError(
            f"database schema version {row.version} is newer than this release supports ({SCHEMA_VERSION})",
            schema_version=row.version,
        )
    while row.version < SCHEMA_VERSION:
        migrate = MIGRATIONS.get(row.version)
        if migrate is None:
            raise ConfigurationError(
                f"no migration from schema version {row.version}", schema_version=row.version
            )
        migrate(session)
        row.version += 1
        row.updated_at = utcnow()
    return row.version
