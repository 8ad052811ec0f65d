"""``python -m benchmarks.export_failure``: recording a failed full compile on N waiting instances.

Why: a full compile that fails (a model error, a time limit) is written on every instance that
waited on it, in the transaction that records the failure (``lsm.compiler.export_failure``).
With 10,000 instances in ``creating`` that must cost a statement per chunk of instances (the
waiting query, chunked row locks, one ``executemany`` of steps and one of event lines), never a
transaction per instance. For each size this imports N instances of the deploy benchmarks' model
(``benchmarks.deploy_model``) into ``creating``, queues a full compile, claims it and times
``CompileQueue.finish(..., status="failed")``: the failure's record, the counter, and the N
transfers to ``failed``. It prints the time and the statements sent (SQL statements, and the
parameter sets of their ``executemany``) as JSON. Nothing here is asserted: the smoke test
(tests/test_benchmarks_smoke.py) only checks that it runs and moves every instance.

    python -m benchmarks.export_failure --sizes 1000 10000
    python -m benchmarks.export_failure --sizes 10000 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, func, select
from sqlmodel import col

from benchmarks.backend import backend_name, fresh_database
from benchmarks.report import emit
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import WorkerProcessing, build_api
from lsm.store.database import Database
from lsm.store.tables import EventRow, InstanceRow

MODEL = str(Path(__file__).with_name("deploy_model.py"))
LOCAL = RequestContext.local()
#: instances per import call (the facade's bulk import writes one transaction per call)
IMPORT_CHUNK = 5000


@contextmanager
def counted(db: Database) -> Iterator[dict[str, int]]:
    """Count the statements sent on ``db``'s write engine, and their parameter sets."""
    counts = {"statements": 0, "parameter_sets": 0}

    def before(conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool) -> None:
        counts["statements"] += 1
        counts["parameter_sets"] += len(params) if executemany else 1

    event.listen(db.write_engine, "before_cursor_execute", before)
    try:
        yield counts
    finally:
        event.remove(db.write_engine, "before_cursor_execute", before)


def run_size(db: Database, size: int) -> dict[str, Any]:
    engine = build_api(ServerConfig(database_url=db.url, model=MODEL, embedded_worker=False), db=db)
    engine.start()
    try:
        inventory = engine.facades.inventory
        for start in range(0, size, IMPORT_CHUNK):
            names = range(start, min(size, start + IMPORT_CHUNK))
            inventory.import_instances(LOCAL, "nothing", "creating", [{"name": f"n{n}"} for n in names])
        compile_ = engine.facades.compiles.request_compile(LOCAL, kind="full")
        processing = engine.processing
        assert isinstance(processing, WorkerProcessing)
        queue = processing.compiles.queue
        env_id = engine.facades.environments.get_environment(LOCAL).id
        batch = queue.claim_exporting(env_id, queue.new_owner("bench"), batched=True)
        assert batch is not None and batch.leader.id == compile_.id
        report = {"error": {"error": "model_error", "message": "a model error for the benchmark"}}
        with counted(db) as counts:
            started = time.perf_counter()
            queue.finish(batch, status="failed", report=report)
            seconds = time.perf_counter() - started
        with db.read() as session:
            moved = session.execute(
                select(func.count()).select_from(InstanceRow).where(col(InstanceRow.state) == "failed")
            ).scalar_one()
            lines = session.execute(
                select(func.count()).select_from(EventRow).where(col(EventRow.trigger) == "export_failed")
            ).scalar_one()
    finally:
        engine.stop()
    return {"instances": size, "moved": moved, "event_lines": lines, "seconds": round(seconds, 4), **counts}


def run(database_url: str | None, sizes: list[int], workdir: Path | None) -> dict[str, Any]:
    found = []
    for size in sizes:
        with fresh_database(database_url, workdir, "export_failure") as db:
            db.create_schema()
            found.append(run_size(db, size))
    return {
        "benchmark": "export_failure",
        "backend": backend_name(database_url),
        "command": sys.argv,
        "sizes": found,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.export_failure", description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000], help="waiting instances")
    parser.add_argument(
        "--database-url", default=None, help="PostgreSQL URL (a fresh schema); SQLite file when absent"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    emit(run(args.database_url, args.sizes, args.workdir), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
