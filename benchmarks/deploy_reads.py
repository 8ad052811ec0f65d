"""``python -m benchmarks.deploy_reads``: what the deploy read side costs on a large environment.

Why: ``GET /api/v1/resources`` pages, ``GET /api/v1/deploy`` (polled by ``lsm deploy --wait``),
an instance's ``deployment_progress`` and ``POST /api/v1/deploy`` must cost the page, the
instance or the rows they change, never the size of the environment. This seeds
``--resources`` state rows (and as many in a second environment, so that nothing may scan
across environments), then times each query of ``lsm.store.deploy.queries`` ``--repeat``
times and prints the median and p95 in milliseconds as JSON. Nothing here is asserted: the
smoke test (tests/test_deploy_reads_bench.py) only checks that it runs.

    python -m benchmarks.deploy_reads --resources 100000
    python -m benchmarks.deploy_reads --resources 100000 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from benchmarks.backend import backend_name, fresh_database
from benchmarks.report import emit
from benchmarks.stats import timed_ms
from lsm.schemas.deploy import ResourceStatus
from lsm.store.deploy import queries as q
from lsm.store.deploy.tables import lsm_deploy_head, lsm_resource_state
from lsm.store.tables import InstanceResourcesRow

ENV = "b" * 36
OTHER = "c" * 36
AGENTS = 10
#: every 100th resource failed, every 100th (+1) skipped, the rest deployed
FAILED_EVERY = 100


def _rows(env_id: str, count: int) -> list[dict[str, Any]]:
    now = datetime.now(UTC)
    rows = []
    for n in range(count):
        agent = f"agent{n % AGENTS}"
        rtype = ("net::Host", "net::Port", "std::File")[n % 3]
        status = "failed" if n % FAILED_EVERY == 0 else ("skipped" if n % FAILED_EVERY == 1 else "deployed")
        rows.append(
            {
                "resource_id": f"{rtype}[{agent},name=r{n:07d}]",
                "env_id": env_id,
                "agent": agent,
                "resource_type": rtype,
                "set_name": f"set{n // 10}",
                "version": 1,
                "desired_hash": "d" * 64,
                "deployed_hash": "d" * 64,
                "last_deployed_version": 1,
                "status": status,
                "purged": False,
                "requires": [],
                "attempts": 0,
                "last_error": "boom" if status == "failed" else None,
                "last_action": "create",
                "last_action_at": now,
            }
        )
    return rows


def seed(db: Any, count: int) -> list[str]:
    """``count`` rows in ENV and in OTHER, an instance owning 50 of ENV's; its resource ids."""
    owned: list[str] = []
    for env_id in (ENV, OTHER):
        rows = _rows(env_id, count)
        with db.write() as session:
            for start in range(0, len(rows), 5000):
                session.connection().execute(insert(lsm_resource_state), rows[start : start + 5000])
        if env_id == ENV:
            owned = [r["resource_id"] for r in rows[:50]]
    with db.write() as session:
        session.add(
            InstanceResourcesRow(
                env_id=ENV, instance_id="i1", set_name="set0", desired_state_version=1, resource_ids=owned
            )
        )
        session.connection().execute(insert(lsm_deploy_head), [{"env_id": ENV, "planned_version": 1}])
    if not db.is_sqlite:
        with db.write() as session:
            session.connection().execute(text("ANALYZE lsm_resource_state"))
    return owned


def run(database_url: str | None, resources: int, repeat: int, workdir: Path | None) -> dict[str, Any]:
    with fresh_database(database_url, workdir, "deploy_reads") as db:
        db.create_schema()
        owned = seed(db, resources)
        middle = f"net::Host[agent0,name=r{resources // 2:07d}]"

        def read(fn: Callable[[Any], object]) -> Callable[[], object]:
            def once() -> object:
                with db.read() as session:
                    return fn(session)

            return once

        cases: dict[str, Callable[[], object]] = {
            "list_first_page": read(lambda s: q.list_resources(s, ENV, limit=100)),
            "list_agent_page": read(lambda s: q.list_resources(s, ENV, agent="agent3", limit=100)),
            "list_failed_page": read(
                lambda s: q.list_resources(s, ENV, status=ResourceStatus.FAILED, limit=100)
            ),
            "list_type_page": read(lambda s: q.list_resources(s, ENV, resource_type="std::File", limit=100)),
            "get_resource": read(lambda s: q.get_resource(s, ENV, middle)),
            "status_counts": read(lambda s: q.status_counts(s, ENV)),
            "instance_progress_50": read(lambda s: q.deployment_progress(s, ENV, "i1")),
        }
        results = {name: timed_ms(fn, repeat) for name, fn in cases.items()}

        def redeploy() -> int:
            with db.write() as session:
                return q.schedule_redeploy(session, ENV, None, False)

        start = time.perf_counter()
        scheduled = redeploy()
        results["schedule_redeploy_failed_and_skipped"] = {
            "ms": round((time.perf_counter() - start) * 1000.0, 3),
            "rows": scheduled,
        }
        assert len(owned) == 50
    return {
        "benchmark": "deploy_reads",
        "backend": backend_name(database_url),
        "command": sys.argv,
        "resources_per_environment": resources,
        "repeat": repeat,
        "unit": "ms",
        "results": results,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.deploy_reads", description=__doc__)
    parser.add_argument("--resources", type=int, default=100_000, help="state rows per environment")
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per query")
    parser.add_argument(
        "--database-url", default=None, help="PostgreSQL URL (a fresh schema); SQLite file when absent"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    doc = run(args.database_url, args.resources, args.repeat, args.workdir)
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
