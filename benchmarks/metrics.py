"""``python -m benchmarks.metrics``: what one ``/metrics`` scrape costs as the inventory grows.

Why: Prometheus scrapes every 15-60 s for ever, so a scrape must stay cheap at 100k instances
and must not grow with the compile history or the action log (docs/architecture.md §10). For
each size this seeds that many instances (over 5 entities and 4 states), as many resource
state rows, as many finished compiles (history a scrape must not read), 50 queued compile
requests, counter rows and agent leases, then times ``lsm.store.metrics.snapshot`` and
the whole exposition (snapshot + text) ``--repeat`` times: median and p95 in milliseconds, as
JSON. Nothing here is asserted; tests/test_benchmarks_smoke.py only checks that it runs.

    python -m benchmarks.metrics --sizes 10000,100000
    python -m benchmarks.metrics --sizes 10000,100000 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from sqlalchemy import insert, text

from benchmarks.backend import backend_name, fresh_database
from benchmarks.report import emit
from benchmarks.stats import timed_ms
from lsm.facade.metrics import SnapshotCollector
from lsm.store import metric_counters
from lsm.store.database import Database
from lsm.store.deploy.tables import lsm_resource_state
from lsm.store.metrics import snapshot
from lsm.store.tables import CompileRow, EnvironmentRow, InstanceRow, LeaseRow

ENV = "e" * 36
ENTITIES = ("router", "port", "tunnel", "vlan", "site")
STATES = ("up", "creating", "failed", "start")
QUEUED = 50
CHUNK = 5000


def _chunks(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + CHUNK] for i in range(0, len(rows), CHUNK)]


def seed(db: Database, size: int) -> None:
    now = datetime.now(UTC)
    with db.write() as session:
        conn = session.connection()
        conn.execute(
            insert(EnvironmentRow.__table__),  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
            [{"id": ENV, "name": "default", "settings": {}, "created_at": now}],
        )
    instances = [
        {
            "id": str(uuid.UUID(int=n)),
            "env_id": ENV,
            "entity": ENTITIES[n % len(ENTITIES)],
            "state": STATES[n % len(STATES)],
            "version": 1,
            "desired_state_version": 1,
            "config": {},
            "deleted": n % 50 == 0,
            "created_at": now,
            "last_updated": now,
        }
        for n in range(size)
    ]
    resources: list[dict[str, Any]] = [
        {
            "resource_id": f"std::File[agent{n % 10},path=/r{n:07d}]",
            "env_id": ENV,
            "agent": f"agent{n % 10}",
            "resource_type": "std::File",
            "set_name": f"set{n // 10}",
            "version": 1,
            "desired_hash": "d" * 64,
            "status": ("deployed", "pending", "failed", "skipped")[n % 4],
            "purged": False,
            "requires": [],
        }
        for n in range(size)
    ]
    compiles: list[dict[str, Any]] = [
        {
            "id": str(uuid.UUID(int=n + 1)),
            "env_id": ENV,
            "kind": ("partial", "validation")[n % 2],
            "status": "queued" if n < QUEUED else "success",
            "requested_ids": [],
            "service_entities": [],
            "exclude": [],
            "reason": "",
            "params": {},
            "report": {"timings": {"total": 0.01}},
            "created_at": now - timedelta(seconds=n),
            "attempts": 0,
        }
        for n in range(size)
    ]
    for table, rows in (
        (InstanceRow.__table__, instances),  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
        (lsm_resource_state, resources),
        (CompileRow.__table__, compiles),  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
    ):
        for part in _chunks(rows):
            with db.write() as session:
                session.connection().execute(insert(table), part)
    with db.write() as session:
        conn = session.connection()
        for n in range(100):
            metric_counters.count_compile(conn, ENV, "partial", "success", {"select": 0.1, "total": 0.3})
            metric_counters.count_actions(
                conn,
                ENV,
                [{"agent": f"agent{n % 10}", "resource_id": "std::File[a,path=/x]", "action": "create"}],
            )
        conn.execute(
            insert(LeaseRow.__table__),  # type: ignore[attr-defined]  # SQLModel declares no __table__ to mypy
            [
                {
                    "name": f"agent:{ENV}:agent{n}",
                    "owner": "p1",
                    "acquired_at": now,
                    "expires_at": now + timedelta(hours=1),
                    "info": {},
                }
                for n in range(10)
            ],
        )
    if not db.is_sqlite:
        with db.write() as session:
            for table in ("lsm_instance", "lsm_resource_state", "lsm_compile"):
                session.connection().execute(text(f"ANALYZE {table}"))
        with db.write_engine.connect() as conn:  # index-only scans need a set visibility map
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM lsm_instance, lsm_resource_state, lsm_compile")
            )


def run_size(database_url: str | None, size: int, repeat: int, workdir: Path | None) -> dict[str, Any]:
    with fresh_database(database_url, workdir, "metrics") as db:
        db.create_schema()
        seed(db, size)

        def read() -> Any:
            with db.read() as session:
                return snapshot(session.connection(), datetime.now(UTC))

        def scrape() -> bytes:
            registry = CollectorRegistry(auto_describe=False)
            registry.register(SnapshotCollector(read()))
            return generate_latest(registry)

        body = scrape()
        return {
            "instances": size,
            "resources": size,
            "compile_history": size - QUEUED,
            "snapshot_ms": timed_ms(read, repeat),
            "scrape_ms": timed_ms(scrape, repeat),
            "body_bytes": len(body),
            "samples": sum(1 for line in body.decode().splitlines() if line and not line.startswith("#")),
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.metrics", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="instances (and resources, compiles) per run")
    parser.add_argument("--repeat", type=int, default=20, help="timed scrapes per size")
    parser.add_argument(
        "--database-url", default=None, help="PostgreSQL URL (a fresh schema); SQLite file when absent"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    doc = {
        "benchmark": "metrics",
        "backend": backend_name(args.database_url),
        "command": sys.argv,
        "repeat": args.repeat,
        "unit": "ms",
        "results": [run_size(args.database_url, size, args.repeat, args.workdir) for size in sizes],
    }
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
