"""``python -m benchmarks.compliance``: a compliance report over a large environment.

Why: a report reads every selected resource through its handler and writes one row per
resource; it must stay well inside a minute for 100,000 resources on SQLite (issue 26: < 60 s).
This stores one full desired-state version of ``--resources`` ``std::Null`` resources (the
bundled handler: it costs nothing, so what is measured is the engine: the selection, the
desired records, the read-only run per resource, the fenced row writes and the counters) over
``--agents`` agent names, plans it and marks it deployed (no need to deploy 100k resources
first), then times from ``POST /api/v1/compliance`` (the facade's ``request``) to the report
``done``, with the agent's compliance source claimed and run in this thread as the service
loop's runners would (``--threads`` handler threads per part); then the first page and counts
of the finished report (``GET``). Nothing is asserted; the smoke test only checks that it runs.

    python -m benchmarks.compliance --resources 100000
    python -m benchmarks.compliance --resources 100000 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import update

from benchmarks.backend import backend_name, fresh_database
from benchmarks.deploy import _engine, _record
from benchmarks.report import emit
from lsm.deploy.agent import AgentService
from lsm.desired_state.records import ExportRequest
from lsm.facade import RequestContext
from lsm.schemas.compliance import ComplianceRequest, ReportStatus
from lsm.store.deploy.tables import lsm_resource_state

LOCAL = RequestContext.local()


def run(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(args.workdir or "/tmp")
    with fresh_database(args.database_url, args.workdir, "compliance") as db:
        engine = _engine(db)
        try:
            env_id = engine.context(None).env_id
            per_set = 10
            sets = {
                f"set-{s}": [
                    _record(n, args.agents)
                    for n in range(s * per_set, min(args.resources, (s + 1) * per_set))
                ]
                for s in range((args.resources + per_set - 1) // per_set)
            }
            engine.store.export(env_id, ExportRequest(kind="full", sets=sets))
            agent = AgentService(
                engine.db,
                engine.orchestrator,
                engine.environments.context,
                owner="bench-agent",
                threads=args.threads,
                state_dir=workdir,
            )
            agent.planner.plan(env_id)
            with engine.db.write() as session:
                session.connection().execute(
                    update(lsm_resource_state).values(
                        status="deployed", deployed_hash=lsm_resource_state.c.desired_hash
                    )
                )
            started = time.perf_counter()
            asked = engine.facades.compliance.request(LOCAL, ComplianceRequest())
            parts = 0
            while (work := agent.compliance.claim()) is not None:
                work.run()
                parts += 1
            elapsed = time.perf_counter() - started
            read_started = time.perf_counter()
            found = engine.facades.compliance.report(LOCAL, asked.id, limit=100)
            read_ms = (time.perf_counter() - read_started) * 1000.0
            agent.stop()
            if found.status != ReportStatus.DONE or found.checked != args.resources:
                raise RuntimeError(f"report {found.status}: {found.checked} of {args.resources} checked")
            return {
                "benchmark": "compliance",
                "backend": backend_name(args.database_url),
                "command": sys.argv,
                "load_average": os.getloadavg()[0],
                "resources": args.resources,
                "agents": args.agents,
                "threads": args.threads,
                "parts": parts,
                "seconds": round(elapsed, 3),
                "resources_per_s": round(args.resources / elapsed, 1),
                "counts": {k.value: v for k, v in found.counts.items()},
                "first_page_and_counts_ms": round(read_ms, 3),
            }
        finally:
            engine.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.compliance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--resources", type=int, default=100_000, help="std::Null resources in the report")
    parser.add_argument(
        "--agents", type=int, default=10, help="agent names they are spread over (one part each)"
    )
    parser.add_argument("--threads", type=int, default=8, help="handler threads per part")
    parser.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    emit(run(args), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
