"""Connection pools with a bound, and the deployment's connection budget on PostgreSQL.

Why: every process of a deployment (the API, each worker, each agent) keeps its own pools, so
unbounded pools add up past the server's ``max_connections`` under an ordinary burst, and the
server answers "too many clients" to whichever process asks last. Here each process has a
fixed ceiling (``PoolLimits``: writers plus readers, never more), a request that finds every
connection busy waits ``timeout`` seconds for one and then fails with SQLAlchemy's pool
``TimeoutError``, which ``lsm.store.transient`` counts as transient (the API answers 503 with
``Retry-After``, background loops retry), and a process that would take the deployment past its
budget refuses to start, naming who holds what (``check_budget``).

How processes see each other without a table: each pooled PostgreSQL connection carries an
``application_name`` that says which process it belongs to, the process's ceiling and its
deployment (the database schema, hashed to fit). ``pg_stat_activity`` then lists the live
processes of a deployment and what each may take; a process that dies takes its entries with
it, so nothing has to be cleaned up after a kill -9.

SQLite has no server-side connection limit: its pools keep SQLAlchemy's defaults, and the
budget is not checked.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Connection, text

from lsm.errors import ConfigurationError

__all__ = [
    "APPLICATION_PREFIX",
    "BudgetUse",
    "PoolConfig",
    "PoolLimits",
    "application_name",
    "check_budget",
    "parse_application_name",
]

#: the first part of the ``application_name`` of every lsm connection
APPLICATION_PREFIX = "lsm:"
#: connections the budget leaves to other clients of the server by default (psql, backups,
#: monitoring), besides the superuser reserve
HEADROOM = 10


class PoolConfig(BaseModel):
    """``[db_pool]`` in ``lsm.toml``: this process's ceiling and the deployment's budget.

    The defaults let an API, two workers and an agent (4 x 20 connections) fit PostgreSQL's
    default ``max_connections`` of 100 with room for other clients.
    """

    model_config = ConfigDict(extra="forbid")

    #: connections this process may hold for writing transactions
    write: int = Field(10, ge=1, le=1000)
    #: connections this process may hold for reading transactions
    read: int = Field(10, ge=1, le=1000)
    #: seconds a transaction waits for a free connection before it fails (the API: 503)
    timeout: float = Field(5.0, gt=0, le=600)
    #: connections every process of the deployment may hold together; ``None``: the server's
    #: ``max_connections`` less its superuser reserve and a headroom for other clients
    budget: int | None = Field(None, ge=1)

    def limits(self) -> PoolLimits:
        return PoolLimits(write=self.write, read=self.read, timeout=self.timeout)


@dataclass(frozen=True)
class PoolLimits:
    """The ceiling of one process's pools (PostgreSQL): ``write + read`` connections at most."""

    write: int = 10
    read: int = 10
    timeout: float = 5.0

    @property
    def total(self) -> int:
        return self.write + self.read

    def engine_options(self, kind: str) -> dict[str, Any]:
        """``create_engine`` pool options for the ``write`` or ``read`` pool: half kept open,
        half opened on demand and closed when returned, never more than the ceiling."""
        size = self.write if kind == "write" else self.read
        kept = max(1, (size + 1) // 2)
        return {"pool_size": kept, "max_overflow": size - kept, "pool_timeout": self.timeout}


_instances = itertools.count(1)


def deployment_tag(schema: str | None) -> str:
    """A short tag for the deployment a connection belongs to: the database schema (tests give
    each test a schema of its own; production uses the default)."""
    return hashlib.sha1((schema or "public").encode()).hexdigest()[:8]


def application_name(role: str, limits: PoolLimits, schema: str | None) -> str:
    """``lsm:<role>:<pid>.<n>:<ceiling>:<deployment>``, within PostgreSQL's 63 characters.

    ``<n>`` tells apart two ``Database`` objects of one process (tests, tools): each has its
    own pools, so each is a holder of its own."""
    holder = f"{os.getpid()}.{next(_instances)}"
    short_role = "".join(ch for ch in role if ch.isalnum() or ch in "-_")[:20] or "lsm"
    return f"{APPLICATION_PREFIX}{short_role}:{holder}:{limits.total}:{deployment_tag(schema)}"


@dataclass(frozen=True)
class Holder:
    """One live pool holder of a deployment, as ``pg_stat_activity`` shows it."""

    role: str
    holder: str
    ceiling: int
    deployment: str


def parse_application_name(name: str) -> Holder | None:
    """The holder an ``application_name`` names, or ``None`` for any other client."""
    if not name.startswith(APPLICATION_PREFIX):
        return None
    parts = name[len(APPLICATION_PREFIX) :].split(":")
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    role, holder, ceiling, deployment = parts
    return Holder(role=role, holder=holder, ceiling=int(ceiling), deployment=deployment)


@dataclass(frozen=True)
class BudgetUse:
    """What the start-up check found: the budget, the server's limit, and the holders."""

    budget: int
    server_limit: int
    others: tuple[Holder, ...]
    own: int

    @property
    def total(self) -> int:
        return self.own + sum(holder.ceiling for holder in self.others)


def check_budget(conn: Connection, own_name: str, config: PoolConfig) -> BudgetUse:
    """Refuse to start a process that would take its deployment past its connection budget.

    ``own_name`` is this process's ``application_name``. The budget must fit the server
    (``max_connections`` less ``superuser_reserved_connections``); the ceilings of the live
    holders of the same deployment plus this process's must fit the budget. Either failure is a
    ``ConfigurationError`` naming the numbers and the settings to change.
    """
    me = parse_application_name(own_name)
    assert me is not None, own_name
    max_connections = int(conn.execute(text("SHOW max_connections")).scalar_one())
    reserved = int(conn.execute(text("SHOW superuser_reserved_connections")).scalar_one())
    server_limit = max_connections - reserved
    budget = config.budget if config.budget is not None else max(1, server_limit - HEADROOM)
    if budget > server_limit:
        raise ConfigurationError(
            f"db_pool.budget is {budget} connections but the PostgreSQL server allows "
            f"{server_limit} (max_connections {max_connections} less {reserved} reserved): "
            "lower db_pool.budget or raise the server's max_connections"
        )
    names = conn.execute(
        text(
            "SELECT DISTINCT application_name FROM pg_stat_activity "
            "WHERE application_name LIKE :prefix AND pid <> pg_backend_pid()"
        ),
        {"prefix": APPLICATION_PREFIX + "%"},
    ).scalars()
    others = tuple(
        sorted(
            (
                holder
                for holder in map(parse_application_name, names)
                if holder is not None and holder.deployment == me.deployment and holder.holder != me.holder
            ),
            key=lambda holder: holder.holder,
        )
    )
    use = BudgetUse(budget=budget, server_limit=server_limit, others=others, own=me.ceiling)
    if use.total > budget:
        held = ", ".join(f"{h.role} {h.holder.split('.')[0]}: {h.ceiling}" for h in others)
        raise ConfigurationError(
            f"this {me.role} may hold {me.ceiling} connections (db_pool.write + db_pool.read), "
            f"the running processes of this deployment may hold {use.total - me.ceiling} ({held}): "
            f"{use.total} is over the budget of {budget} (db_pool.budget); lower db_pool.write "
            "and db_pool.read or raise the budget"
        )
    return use
