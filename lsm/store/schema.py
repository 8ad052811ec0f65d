"""Schema creation and migration (Alembic), run by every process when it opens the database.

Why here and not in a separate command: a worker, an agent or an API server may start first
against a database made by an older release, and each must find the schema it was built for.
The first one to get the lock migrates; the others find the work done.

* A new, empty database gets every table from the metadata in one go (``create_all``) and is
  stamped at the newest revision: creating is one step, not a replay of history.
* A database of release 0.1.0 (it has ``lsm_schema_version`` and no ``alembic_version``) is
  stamped at the baseline revision ``0001`` and upgraded.
* A database stamped by Alembic is upgraded to the newest revision; one stamped with a
  revision this release does not know (made by a newer release) is refused.

``tests/store/test_migrations.py`` proves that an upgraded 0.1.0 database and a new one
have the same schema. Migrations live in ``lsm/store/migrations/versions``.
"""

from __future__ import annotations

import functools
import hashlib

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlmodel import SQLModel

from lsm.errors import ConfigurationError
from lsm.store import idempotency, metric_counters, orders, tables  # noqa: F401  (registers the tables)
from lsm.store.auth import tables as auth_tables  # noqa: F401  (registers the tables)
from lsm.store.compliance import tables as compliance_tables  # noqa: F401  (registers the tables)
from lsm.store.deploy import tables as deploy_tables  # noqa: F401  (registers the tables)
from lsm.store.desired_state import tables as desired_state_tables  # noqa: F401  (registers the tables)
from lsm.store.discovery import tables as discovery_tables  # noqa: F401  (registers the tables)
from lsm.store.environments import halts  # noqa: F401  (registers the tables)
from lsm.store.webhooks import tables as webhook_tables  # noqa: F401  (registers the tables)

#: the revision a database made by release 0.1.0 is at
BASELINE = "0001"
_LOCK_KEY = int.from_bytes(hashlib.blake2b(b"lsm-schema", digest_size=8).digest(), "big", signed=True)


@functools.cache
def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", "lsm.store:migrations")
    return config


def head_revision() -> str:
    head = script_directory().get_current_head()
    assert head is not None
    return head


def current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


def upgrade_schema(connection: Connection) -> str:
    """Bring the database on ``connection`` (inside its transaction) to the newest revision."""
    if connection.dialect.name == "postgresql":
        # two processes starting together: one migrates, the other waits and finds it done
        connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
    names = set(inspect(connection).get_table_names())
    head = head_revision()
    if "alembic_version" in names:
        current = current_revision(connection)
        if current == head:
            return head
        if current is not None and current not in _known_revisions():
            raise ConfigurationError(
                f"the database schema is at revision {current}, which this release does not know "
                f"(a newer release made it); this release goes up to {head}",
                revision=current,
            )
        _run(connection, "upgrade", head)
    elif "lsm_schema_version" in names:
        version = connection.execute(text("SELECT version FROM lsm_schema_version WHERE id = 1")).scalar()
        if version != 1:
            raise ConfigurationError(
                f"database schema version {version} is not one this release can upgrade from (1)",
                schema_version=version,
            )
        _run(connection, "stamp", BASELINE)
        _run(connection, "upgrade", head)
    elif "lsm_environment" in names:
        raise ConfigurationError("the database has lsm tables but no schema revision; refusing to touch it")
    else:
        SQLModel.metadata.create_all(connection)
        _run(connection, "stamp", head)
    return head


@functools.cache
def _known_revisions() -> frozenset[str]:
    return frozenset(rev.revision for rev in script_directory().walk_revisions())


def _run(connection: Connection, what: str, revision: str) -> None:
    from alembic import command

    config = _config()
    config.attributes["connection"] = connection
    if what == "stamp":
        command.stamp(config, revision)
    else:
        command.upgrade(config, revision)
