"""``python -m benchmarks.autogroup``: N files in one directory, deployed grouped and alone.

Two first deploys of ``--files`` ``std::File`` resources in one directory, each on a fresh
database (SQLite file, or a schema on ``--database-url``), by one agent in this thread (as
``benchmarks.deploy`` runs it): once as they are (the file handler groups by directory,
docs/semantics.md §5 ``autogroup``), once with ``meta.autogroup = False`` on every file. Reported:
handler calls, the seconds from the first claim to the last result written, and the seconds
inside the handler calls (``BatchRunner.execute``, what grouping changes), best of
``--repeat``. Figures go to ``benchmarks/results/autogroup-<backend>-<stamp>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.backend import backend_name, fresh_database
from benchmarks.deploy import _agent, _engine, claim
from lsm.desired_state.records import ExportRequest, ResourceRecord


def _files(root: Path, count: int, grouped: bool) -> list[ResourceRecord]:
    records = []
    for n in range(count):
        path = str(root / f"f{n}")
        attributes: dict[str, Any] = {"agent": "files", "path": path, "content": f"line {n}\n", "mode": 0o644}
        attributes["purged"] = False
        if not grouped:
            attributes["meta"] = {"autogroup": False}
        records.append(ResourceRecord(f"std::File[files,path={path}]", attributes))
    return records


def deploy_once(args: argparse.Namespace, grouped: bool) -> dict[str, Any]:
    with (
        fresh_database(args.database_url, args.workdir, "autogroup") as db,
        tempfile.TemporaryDirectory(prefix="lsm-bench-autogroup-", dir=args.workdir) as files,
    ):
        engine = _engine(db)
        try:
            env_id = engine.context(None).env_id
            engine.store.export(
                env_id, ExportRequest("full", sets={"files": _files(Path(files), args.files, grouped)})
            )
            agent = _agent(engine, args, Path(files))
            runner = agent.runner
            inside = 0.0
            execute = runner.execute

            def timed(*a: Any, **kw: Any) -> Any:
                nonlocal inside
                began = time.perf_counter()
                try:
                    return execute(*a, **kw)
                finally:
                    inside += time.perf_counter() - began

            runner.execute = timed  # type: ignore[method-assign]  # the benchmark times the handler phase
            started = time.perf_counter()
            while (work := claim(agent)) is not None:
                work.run()
            elapsed = time.perf_counter() - started
            agent.stop()
            written = len([name for name in os.listdir(files) if name.startswith("f")])
            if written != args.files:
                raise RuntimeError(f"{written} of {args.files} files written")
            return {
                "grouped": grouped,
                "files": args.files,
                "handler_calls": runner.handler_calls,
                "seconds": round(elapsed, 3),
                "handler_seconds": round(inside, 3),
            }
        finally:
            engine.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=1_000, help="resources claimed per batch")
    parser.add_argument("--threads", type=int, default=8, help="handler threads of the agent")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is reported")
    parser.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    parser.add_argument("--workdir", type=Path, default=None, help="where SQLite files go")
    args = parser.parse_args(argv)
    if args.workdir is None:  # the agent's jail holds the work directory: it must be a real one
        args.workdir = Path(tempfile.gettempdir())
    runs = {
        grouped: min((deploy_once(args, grouped) for _ in range(args.repeat)), key=lambda r: r["seconds"])
        for grouped in (False, True)
    }
    alone, grouped = runs[False], runs[True]
    doc = {
        "scenario": "autogroup",
        "backend": backend_name(args.database_url),
        "started_at": datetime.now(UTC).isoformat(),
        "load_average": os.getloadavg()[0],
        "alone": alone,
        "grouped": grouped,
        "speedup": round(alone["seconds"] / grouped["seconds"], 2),
        "handler_speedup": round(alone["handler_seconds"] / grouped["handler_seconds"], 2),
    }
    for row in (alone, grouped):
        label = "grouped" if row["grouped"] else "alone"
        print(
            f"{label:8} {row['files']} files: {row['handler_calls']} handler calls, {row['seconds']} s "
            f"first claim to last result, {row['handler_seconds']} s in handler calls"
        )
    print(f"speed-up: {doc['speedup']}x end to end, {doc['handler_speedup']}x in handler calls")
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    (out / f"autogroup-{doc['backend']}-{stamp}.json").write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
