"""Monotonic counters for ``/metrics``, kept as a handful of rows and bumped by their writers.

Why rows and not a scan: compiles run in ``lsm worker`` processes and deploys in ``lsm agent``
processes, yet one scrape of any API process must see the whole system. Counting the compile
history or the action log per scrape would cost 100k+ rows; instead the transaction that
finishes a compile (``lsm.compiler.queue``) and the one that writes an agent's results
(``lsm.store.deploy.results``) UPSERT a few aggregate rows, so the numbers commit (or roll
back) with what they count and a scrape reads a few dozen rows.

Counters only grow: nothing here is deleted by desired-state retention or any pruning, so
Prometheus' ``rate()`` never sees a reset (except when the database itself is replaced).

Every upsert takes its rows in key order, so two transactions bumping the same rows (two
workers finishing validations of one environment) wait for each other instead of deadlocking.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Column, Connection, Float, Integer, PrimaryKeyConstraint, String, Table, bindparam
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import SQLModel

from lsm.store.deploy.tables import resource_type_of

metadata = SQLModel.metadata

#: compiles that ran, per environment, kind and outcome (``lsm_compiles_total``)
lsm_metric_compile = Table(
    "lsm_metric_compile",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("count", Integer, nullable=False),
    PrimaryKeyConstraint("env_id", "kind", "status", name="pk_lsm_metric_compile"),
)

#: time spent per compile stage (``lsm_compile_stage_seconds``, a summary: count and sum)
lsm_metric_compile_stage = Table(
    "lsm_metric_compile_stage",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("stage", String(100), nullable=False),
    Column("count", Integer, nullable=False),
    Column("seconds", Float, nullable=False),
    PrimaryKeyConstraint("env_id", "kind", "stage", name="pk_lsm_metric_compile_stage"),
)

#: deploy actions per environment, agent, resource type and action kind (``error``: a failure)
lsm_metric_deploy_action = Table(
    "lsm_metric_deploy_action",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("resource_type", String(255), nullable=False),
    Column("action", String(20), nullable=False),
    Column("count", Integer, nullable=False),
    PrimaryKeyConstraint("env_id", "agent", "resource_type", "action", name="pk_lsm_metric_deploy_action"),
)

#: failed exporting compiles per environment and error kind (``lsm_failed_exports_total``)
lsm_metric_failed_export = Table(
    "lsm_metric_failed_export",
    metadata,
    Column("env_id", String(36), nullable=False),
    Column("error", String(100), nullable=False),
    Column("count", Integer, nullable=False),
    PrimaryKeyConstraint("env_id", "error", name="pk_lsm_metric_failed_export"),
)

#: a stage name longer than the column (a model's own refine stage) is cut, never refused
_MAX_STAGE = 100


#: the upsert of each (dialect, table), built once: ``bindparam`` per column, run as executemany
_UPSERTS: dict[tuple[str, str], Any] = {}


def _upsert_statement(dialect: str, table: Table, keys: list[str], sums: list[str]) -> Any:
    found = _UPSERTS.get((dialect, table.name))
    if found is None:
        dialect_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        statement = dialect_insert(table).values({c.name: bindparam(f"b_{c.name}") for c in table.c})
        found = _UPSERTS[dialect, table.name] = statement.on_conflict_do_update(
            index_elements=keys,
            set_={name: table.c[name] + statement.excluded[name] for name in sums},
        )
    return found


def _upsert(
    conn: Connection, table: Table, keys: list[str], rows: list[dict[str, Any]], sums: list[str]
) -> None:
    """Insert ``rows`` or add their ``sums`` columns to the existing ones, rows in key order.

    Why one statement built once and executed with every row (``executemany``): a compile's
    finish bumps one outcome row and a row per stage, and one upsert built and sent per row
    cost a round trip and a statement construction each on the worker's hot path. psycopg
    sends an executemany as one pipeline; the rows are still locked in key order.
    """
    statement = _upsert_statement(conn.dialect.name, table, keys, sums)
    ordered = sorted(rows, key=lambda r: tuple(r[k] for k in keys))
    conn.execute(statement, [{f"b_{name}": value for name, value in row.items()} for row in ordered])


def count_compile(
    conn: Connection, env_id: str, kind: str, status: str, timings: Mapping[str, Any] | None
) -> None:
    """One compile of ``kind`` ended with ``status``; ``timings``: seconds per stage (its report's)."""
    count_compiles(conn, [(env_id, kind, status, timings)])


def count_compiles(
    conn: Connection, compiles: Iterable[tuple[str, str, str, Mapping[str, Any] | None]]
) -> None:
    """Many compiles (``env_id, kind, status, timings`` each), summed per key before writing.

    A round of validations finishes hundreds of compiles in one transaction; one upsert
    ``executemany`` per table (a row per distinct key) keeps their counting as cheap as their
    one ``executemany`` finish.
    """
    outcomes: dict[tuple[str, str, str], int] = {}
    stages: dict[tuple[str, str, str], tuple[int, float]] = {}
    for env_id, kind, status, timings in compiles:
        outcomes[env_id, kind, status] = outcomes.get((env_id, kind, status), 0) + 1
        for stage, value in (timings or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                key = (env_id, kind, str(stage)[:_MAX_STAGE])
                count, seconds = stages.get(key, (0, 0.0))
                stages[key] = (count + 1, seconds + float(value))
    _upsert(
        conn,
        lsm_metric_compile,
        ["env_id", "kind", "status"],
        [{"env_id": e, "kind": k, "status": st, "count": n} for (e, k, st), n in outcomes.items()],
        ["count"],
    )
    if stages:
        _upsert(
            conn,
            lsm_metric_compile_stage,
            ["env_id", "kind", "stage"],
            [
                {"env_id": e, "kind": k, "stage": stage, "count": n, "seconds": total}
                for (e, k, stage), (n, total) in stages.items()
            ],
            ["count", "seconds"],
        )


def count_failed_export(conn: Connection, env_id: str, error: str) -> None:
    """One exporting compile failed with the error kind ``error`` (``export_rule_violation``,
    ``model_error``, ``compile_timeout``, ``worker_died``...), counted with its failed record."""
    _upsert(
        conn,
        lsm_metric_failed_export,
        ["env_id", "error"],
        [{"env_id": env_id, "error": error[:_MAX_STAGE], "count": 1}],
        ["count"],
    )


def count_actions(conn: Connection, env_id: str, actions: Iterable[Mapping[str, Any]]) -> None:
    """Count action-log lines (dicts with ``resource_id``, ``agent``, ``action``; dry runs are not
    deploys and are left out): one upsert row per distinct agent, type and action of the batch."""
    counts = Counter(
        (str(a["agent"]), resource_type_of(str(a["resource_id"])), str(a["action"]))
        for a in actions
        if not a.get("dry_run")
    )
    if counts:
        _upsert(
            conn,
            lsm_metric_deploy_action,
            ["env_id", "agent", "resource_type", "action"],
            [
                {"env_id": env_id, "agent": agent, "resource_type": rtype, "action": action, "count": n}
                for (agent, rtype, action), n in counts.items()
            ],
            ["count"],
        )


#: the counters' one upsert, for counters kept beside their own aggregate (compliance reports)
upsert_counts = _upsert

__all__ = [
    "count_actions",
    "count_compile",
    "count_compiles",
    "count_failed_export",
    "lsm_metric_compile",
    "lsm_metric_compile_stage",
    "lsm_metric_deploy_action",
    "lsm_metric_failed_export",
    "upsert_counts",
]
