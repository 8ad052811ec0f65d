"""``python -m benchmarks deploy``: deploy throughput, and the engine time to schedule a 1-set change.

Two measurements, each on a fresh database (SQLite file, or a schema on ``--database-url``):

* **first deploy**: one full desired-state version of ``--resources`` resources of the bundled
  ``std::Null`` handler (``lsm_handlers.null``: costs nothing, so this is the engine) over
  ``--agents`` agent names, deployed by one agent process (its handler threads, batches of
  ``--batch``) from the first plan to the last result written; reported as resources per
  second; then the same with ``--files`` ``std::File`` resources (real files under a temporary
  directory: the engine plus the file system);
* **schedule one set**: a base of N sets (``--bases``, one resource each, all deployed), then
  ``--repeat`` partial versions that each change one set; timed is the engine's work before the
  handler runs: ``claim`` below (plan the new version, find the open names, claim the
  changed resource). Median and p95 in milliseconds, after a warm-up of 2 changes per agent
  name (until the agent holds its names, as a running agent does);
* **schedule one removal**: the same on a base of N sets of two resources each
  (``--shrink-bases``), where each partial version shrinks one set to one resource: timed is
  the engine's work until the removal of the resource that left is claimed (plan, find the
  name, claim), before its handler runs.

``--resources 0`` and ``--bases ''`` leave the first deploy and the 1-set changes out (to measure
only the removals).

The agent runs in this thread (``claim`` then ``run``), as the service loop's runner would: its
work sources in order (recovery passes, plans, claims), each job run until a batch is claimed.
Figures are printed and written to ``benchmarks/results/deploy-<backend>-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import update

from benchmarks import report
from benchmarks.backend import backend_name, fresh_database
from benchmarks.stats import percentile
from lsm.deploy.agent import AgentService
from lsm.deploy.batches import DeployWork
from lsm.deploy.jail import Jail
from lsm.desired_state.records import ExportRequest, ResourceRecord
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from lsm.store.deploy.tables import lsm_resource_state

MODEL = Path(__file__).resolve().parent / "deploy_model.py"


def add_deploy_parser(commands: Any) -> None:
    deploy = commands.add_parser(
        "deploy",
        help="deploy throughput (null resources) and the engine time to schedule a 1-set change",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    deploy.add_argument("--resources", type=int, default=10_000, help="resources of the first deploy")
    deploy.add_argument("--agents", type=int, default=10, help="agent names they are spread over")
    deploy.add_argument(
        "--files", type=int, default=10_000, help="std::File resources of the second first deploy (0: none)"
    )
    deploy.add_argument("--batch", type=int, default=200, help="resources claimed per batch")
    deploy.add_argument("--threads", type=int, default=8, help="handler threads of the agent")
    deploy.add_argument("--bases", default="1000,100000", help="set counts of the scheduling bases")
    deploy.add_argument(
        "--shrink-bases",
        default="1000,100000",
        help="set counts of the removal bases (two resources per set)",
    )
    deploy.add_argument("--repeat", type=int, default=30, help="1-set changes measured per base")
    deploy.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    deploy.add_argument("--workdir", type=Path, default=None, help="where SQLite files go")
    deploy.add_argument("--json", type=Path, default=None, help="result file")


def _engine(db: Database) -> ApiRuntime:
    engine = build_api(ServerConfig(database_url=db.url, model=str(MODEL), embedded_worker=False), db=db)
    engine.start()
    return engine


def _agent(engine: ApiRuntime, args: argparse.Namespace, workdir: Path) -> AgentService:
    return AgentService(
        engine.db,
        engine.orchestrator,
        engine.environments.context,
        owner="bench-agent",
        threads=args.threads,
        batch=args.batch,
        state_dir=workdir,
        # the std::File scenario writes its files beside the state directory, in the bench's workdir
        jail=Jail.of([workdir, args.workdir]),
    )


def claim(agent: AgentService) -> DeployWork | None:
    """The agent's next batch, the jobs due before it (a recovery pass, a plan) run first."""
    while True:
        work = next((w for source in agent.sources if (w := source.claim()) is not None), None)
        if work is None or isinstance(work, DeployWork):
            return work
        work.run()


def _record(n: int, agents: int, value: int = 0) -> ResourceRecord:
    """The stored form of ``std::Null(agent=agent-<n % agents>, name=r<n>, data=value)``."""
    agent = f"agent-{n % agents}"
    return ResourceRecord(
        f"std::Null[{agent},name=r{n}]", {"agent": agent, "name": f"r{n}", "data": value, "purged": False}
    )


def _file_record(n: int, agents: int, root: Path) -> ResourceRecord:
    """The stored form of ``std::File(agent=files-<n % agents>, path=<root>/f<n>, ...)``."""
    agent = f"files-{n % agents}"
    path = str(root / f"f{n}")
    attributes = {"agent": agent, "path": path, "content": f"line {n}\n", "mode": 0o644, "purged": False}
    return ResourceRecord(f"std::File[{agent},path={path}]", attributes)


def first_deploy(
    args: argparse.Namespace, workdir: Path, kind: str = "std::Null", count: int | None = None
) -> dict[str, Any]:
    total = args.resources if count is None else count
    with (
        fresh_database(args.database_url, args.workdir, "deploy") as db,
        tempfile.TemporaryDirectory(prefix="lsm-bench-files-", dir=args.workdir) as files,
    ):
        engine = _engine(db)
        try:
            env_id = engine.context(None).env_id
            per_set = 10

            def record(n: int) -> ResourceRecord:
                if kind == "std::File":
                    return _file_record(n, args.agents, Path(files))
                return _record(n, args.agents)

            sets = {
                f"set-{s}": [record(n) for n in range(s * per_set, min(total, (s + 1) * per_set))]
                for s in range((total + per_set - 1) // per_set)
            }
            engine.store.export(env_id, ExportRequest(kind="full", sets=sets))
            agent = _agent(engine, args, workdir)
            started = time.perf_counter()
            batches = 0
            while (work := claim(agent)) is not None:
                work.run()
                batches += 1
            elapsed = time.perf_counter() - started
            agent.stop()
            with engine.db.read() as session:
                deployed = session.connection().execute(
                    lsm_resource_state.select().where(lsm_resource_state.c.status == "deployed")
                )
                count = len(deployed.all())
            if count != total:
                raise RuntimeError(f"{count} of {total} {kind} resources deployed")
            if kind == "std::File" and len(os.listdir(files)) != total:
                raise RuntimeError(f"{len(os.listdir(files))} of {total} files written")
            return {
                "type": kind,
                "resources": total,
                "agents": args.agents,
                "batches": batches,
                "seconds": round(elapsed, 3),
                "resources_per_s": round(total / elapsed, 1),
            }
        finally:
            engine.stop()


def schedule_one_set(
    args: argparse.Namespace, base: int, workdir: Path, *, shrink: bool = False
) -> dict[str, Any]:
    """The 1-set change measurement; ``shrink``: sets of two resources, each change drops one
    (the removal of the resource that left is what is claimed)."""
    rng = random.Random(0)
    per_set = 2 if shrink else 1

    def members(n: int, value: int = 0) -> list[ResourceRecord]:
        return [_record(n * per_set + i, args.agents, value) for i in range(per_set)]

    with fresh_database(args.database_url, args.workdir, f"sched{base}{'s' if shrink else ''}") as db:
        engine = _engine(db)
        try:
            env_id = engine.context(None).env_id
            engine.store.export(
                env_id, ExportRequest(kind="full", sets={f"set-{n}": members(n) for n in range(base)})
            )
            agent = _agent(engine, args, workdir)
            agent.planner.plan(env_id)
            with engine.db.write() as session:  # the base is deployed (no need to run 100k handlers)
                session.connection().execute(
                    update(lsm_resource_state).values(
                        status="deployed", deployed_hash=lsm_resource_state.c.desired_hash
                    )
                )
            if not db.is_sqlite:
                # A base that reached "all deployed" over time has been vacuumed by autovacuum; the
                # one bulk UPDATE above leaves every old (pending) row version in the partial index
                # of open work until then, which each claim would walk. Measure the steady state.
                with db.write_engine.connect() as conn:
                    conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(
                        "VACUUM ANALYZE lsm_resource_state"
                    )
            times: list[float] = []
            warmup = 2 * args.agents  # until the agent holds its names (a steady state)
            unshrunk = list(range(base))
            rng.shuffle(unshrunk)
            for step in range(1, warmup + args.repeat + 1):
                n = unshrunk.pop() if shrink else rng.randrange(base)
                changed = members(n)[:1] if shrink else members(n, step)
                engine.store.export(env_id, ExportRequest(kind="partial", sets={f"set-{n}": changed}))
                started = time.perf_counter()
                work = claim(agent)
                if step > warmup:
                    times.append((time.perf_counter() - started) * 1000)
                if work is None or len(work.claimed) != 1:
                    raise RuntimeError(f"expected one claimed resource, got {work and len(work.claimed)}")
                if shrink and work.claimed[0].removal is None:
                    raise RuntimeError(
                        f"expected the removal of a resource of set-{n}, got {work.claimed[0]}"
                    )
                work.run()
            agent.stop()
            return {
                "kind": "removal" if shrink else "change",
                "base_sets": base,
                "repeat": args.repeat,
                "median_ms": round(percentile(times, 50), 2),
                "p95_ms": round(percentile(times, 95), 2),
            }
        finally:
            engine.stop()


def run_deploy_command(args: argparse.Namespace, argv: list[str]) -> int:
    out = Console(width=200)
    started_at = datetime.now(UTC)
    backend = backend_name(args.database_url)
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(args.workdir or "/tmp") / f"lsm-bench-deploy-state-{started_at:%Y%m%d%H%M%S}"
    first = first_deploy(args, workdir) if args.resources > 0 else None
    files = first_deploy(args, workdir, "std::File", args.files) if args.files > 0 else None
    bases = [int(b) for b in args.bases.split(",") if b.strip()]
    scheduling = [schedule_one_set(args, base, workdir) for base in bases]
    shrink_bases = [int(b) for b in args.shrink_bases.split(",") if b.strip()]
    scheduling += [schedule_one_set(args, base, workdir, shrink=True) for base in shrink_bases]
    table = Table(title=f"deploy on {backend}")
    table.add_column("measurement")
    table.add_column("result", justify="right")
    if first is not None:
        table.add_row(
            f"first deploy of {first['resources']:,} resources over {first['agents']} agents",
            f"{first['resources_per_s']:,.0f} resources/s ({first['seconds']} s, {first['batches']} batches)",
        )
    if files is not None:
        table.add_row(
            f"first deploy of {files['resources']:,} std::File resources over {files['agents']} agents",
            f"{files['resources_per_s']:,.0f} resources/s ({files['seconds']} s, {files['batches']} batches)",
        )
    for row in scheduling:
        what = "the removal of one shrunk set" if row["kind"] == "removal" else "a 1-set change"
        table.add_row(
            f"schedule {what} on a {row['base_sets']:,}-set base (claim, before the handler)",
            f"median {row['median_ms']} ms, p95 {row['p95_ms']} ms",
        )
    out.print(table)
    doc = {
        "scenario": "deploy",
        "backend": backend,
        "argv": argv,
        "started_at": started_at.isoformat(),
        "load_average": os.getloadavg()[0],
        "first_deploy": first,
        "first_deploy_files": files,
        "scheduling": scheduling,
    }
    path = args.json or report.default_path("deploy", backend, started_at)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    out.print(f"results written to {path}")
    return 0
