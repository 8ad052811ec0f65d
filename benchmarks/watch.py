"""``python -m benchmarks watch``: drift on watched files repaired, and what idle watches cost.

One engine in this process as ``lsm server`` runs it (its service loop compiles and deploys,
the embedded agent watches), on a fresh database (SQLite file, or a schema on
``--database-url``), with no ``poll`` and the repair run at its default interval (600 s), so
only the watches can repair anything:

* **setup**: ``--files`` ``std::File`` resources (``--per-dir`` to a directory) in one full
  version, deployed, then waited for until every one is watched;
* **idle**: the process's CPU time (every thread) over ``--idle`` seconds, as a share of one
  core, once with nothing stored (the idle engine: its service loop, heartbeats) and once with
  every file watched; the difference is what the watches cost. Resident memory then, against
  the memory before the version was stored (so the growth counts the deployed rows' caches
  too: an upper bound of what the watches cost);
* **drift**: ``--edits`` times, one random file is rewritten by hand (a new file renamed over
  it, as an editor saves) and timed until it holds its desired content again (read every
  millisecond); one edit every ``--gap`` seconds. Median, p99 and max in milliseconds.

Figures are printed and written to ``benchmarks/results/watch-<backend>-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks import report
from benchmarks.backend import backend_name, fresh_database
from benchmarks.stats import percentile
from lsm.desired_state.records import ExportRequest, ResourceRecord
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api

MODEL = Path(__file__).resolve().parent / "deploy_model.py"


def add_watch_parser(commands: Any) -> None:
    watch = commands.add_parser(
        "watch",
        help="drift on a watched file repaired (p50/p99), and the idle cost of 10,000 watches",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    watch.add_argument("--files", type=int, default=10_000, help="watched std::File resources")
    watch.add_argument("--per-dir", type=int, default=100, help="files per directory")
    watch.add_argument("--edits", type=int, default=100, help="hand edits timed")
    watch.add_argument("--gap", type=float, default=0.2, help="seconds between two edits")
    watch.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU measured")
    watch.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    watch.add_argument("--workdir", type=Path, default=None, help="where SQLite files and the files go")
    watch.add_argument("--json", type=Path, default=None, help="result file")
    watch.add_argument("--seed", type=int, default=0, help="random seed: which files are edited")


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _path(root: Path, n: int, per_dir: int) -> Path:
    return root / f"d{n // per_dir}" / f"f{n}"


def _record(path: Path, n: int) -> ResourceRecord:
    attributes = {
        "agent": "files",
        "path": str(path),
        "content": f"line {n}\n",
        "mode": 0o644,
        "purged": False,
    }
    return ResourceRecord(f"std::File[files,path={path}]", attributes)


def _wait(condition: Any, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {seconds:g} s: {what}")
        time.sleep(0.05)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    with fresh_database(args.database_url, args.workdir, "watch") as db:
        state = Path(db.url.split("///", 1)[1]).parent / "state" if db.is_sqlite else None
        if state is None:
            import tempfile

            state = Path(tempfile.mkdtemp(prefix="lsm-bench-watch-state-", dir=args.workdir))
        files = state / "files"
        for d in range((args.files + args.per_dir - 1) // args.per_dir):
            (files / f"d{d}").mkdir(parents=True, exist_ok=True)
        config = ServerConfig(
            database_url=db.url,
            model=str(MODEL),
            embedded_worker=True,
            embedded_agent=True,
            state_dir=str(state),
        )
        engine = build_api(config, db=db)
        engine.start()
        try:
            agent = engine.processing.agent
            assert agent is not None
            time.sleep(2.0)
            cpu0, wall0 = _cpu(), time.perf_counter()
            time.sleep(args.idle)
            base_cpu = (_cpu() - cpu0) / (time.perf_counter() - wall0)
            rss_before = _rss_mb()
            env_id = engine.context(None).env_id
            sets = {
                f"d{d}": [_record(_path(files, n, args.per_dir), n) for n in range(d * args.per_dir, top)]
                for d in range((args.files + args.per_dir - 1) // args.per_dir)
                if (top := min(args.files, (d + 1) * args.per_dir))
            }
            started = time.perf_counter()
            engine.store.export(env_id, ExportRequest(kind="full", sets=sets))
            _wait(lambda: agent.watches.active() == args.files, "every file is watched", 900)
            setup = time.perf_counter() - started
            time.sleep(2.0)  # let the last results and the heartbeat settle
            cpu0, wall0 = _cpu(), time.perf_counter()
            time.sleep(args.idle)
            idle_cpu = (_cpu() - cpu0) / (time.perf_counter() - wall0)
            rss_idle = _rss_mb()

            times: list[float] = []
            for step in range(args.edits):
                n = rng.randrange(args.files)
                path = _path(files, n, args.per_dir)
                desired = f"line {n}\n"
                temporary = path.with_name(f".{path.name}.swp")
                temporary.write_text(f"edited by hand {step}\n")
                edited = time.perf_counter()
                os.replace(temporary, path)
                while path.read_text() != desired:
                    if time.perf_counter() - edited > 60:
                        raise RuntimeError(f"{path} was not repaired within 60 s")
                    time.sleep(0.001)
                times.append((time.perf_counter() - edited) * 1000)
                time.sleep(args.gap)
        finally:
            engine.stop()
    return {
        "files": args.files,
        "per_dir": args.per_dir,
        "setup_s": round(setup, 1),
        "idle_s": args.idle,
        "idle_cpu_percent_of_a_core": round(idle_cpu * 100, 2),
        "base_idle_cpu_percent_of_a_core": round(base_cpu * 100, 2),
        "watches_cpu_percent_of_a_core": round((idle_cpu - base_cpu) * 100, 2),
        "rss_before_mb": round(rss_before, 1),
        "rss_idle_mb": round(rss_idle, 1),
        "rss_growth_mb": round(rss_idle - rss_before, 1),
        "edits": args.edits,
        "repair_p50_ms": round(percentile(times, 50), 1),
        "repair_p99_ms": round(percentile(times, 99), 1),
        "repair_max_ms": round(max(times), 1),
    }


def run_watch_command(args: argparse.Namespace, argv: list[str]) -> int:
    out = Console(width=200)
    started_at = datetime.now(UTC)
    backend = backend_name(args.database_url)
    result = measure(args)
    table = Table(title=f"watch on {backend}")
    table.add_column("measurement")
    table.add_column("result", justify="right")
    table.add_row(
        f"{result['files']:,} watched files idle ({result['idle_s']:g} s)",
        f"{result['idle_cpu_percent_of_a_core']}% of a core ({result['base_idle_cpu_percent_of_a_core']}% "
        f"before the version: +{result['watches_cpu_percent_of_a_core']}%), +{result['rss_growth_mb']} MB "
        f"({result['rss_before_mb']} -> {result['rss_idle_mb']} MB)",
    )
    table.add_row(
        f"drift on a watched file repaired ({result['edits']} edits, no poll, repair run at 600 s)",
        f"p50 {result['repair_p50_ms']} ms, p99 {result['repair_p99_ms']} ms, "
        f"max {result['repair_max_ms']} ms",
    )
    out.print(table)
    doc = {
        "scenario": "watch",
        "backend": backend,
        "argv": argv,
        "started_at": started_at.isoformat(),
        "load_average": os.getloadavg()[0],
        "result": result,
    }
    path = args.json or report.default_path("watch", backend, started_at)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    out.print(f"results written to {path}")
    return 0


__all__ = ["add_watch_parser", "run_watch_command"]
