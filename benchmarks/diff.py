"""``python -m benchmarks.diff``: the cost of diffing two desired-state versions, by version size.

Why: ``GET /api/v1/desired_state/{a}/diff/{b}`` must cost the sets written between the two
versions, never their size (``lsm.desired_state.diff``). This stores a full export of
``--sets`` sets (one resource each, plus one shared), then a partial export that changes one
set, in a second environment as large as the first (nothing may scan across environments),
and times ``DesiredStateStore.diff(1, 2)`` and ``diff(2, 1)`` ``--repeat`` times; it prints
the median and p95 in milliseconds as JSON. Nothing here is asserted: the smoke test
(tests/test_diff_bench.py) only checks that it runs and finds the one set.

    python -m benchmarks.diff --sets 1000 100000
    python -m benchmarks.diff --sets 100000 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.backend import backend_name, fresh_database
from benchmarks.report import emit
from benchmarks.stats import timed_ms
from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.store.database import Database
from lsm.store.tables import EnvironmentRow


def _environment(db: Database) -> str:
    with db.write() as session:
        row = EnvironmentRow(name=f"bench-{uuid.uuid4().hex[:8]}")
        session.add(row)
        session.flush()
        return row.id


def _full(sets: int) -> ExportRequest:
    shared = ResourceRecord("std::Shared[a,name=s]", {"v": 1})
    return ExportRequest(
        "full",
        sets={
            f"set{i:06d}": [ResourceRecord(f"std::R[a,name=r{i:06d}]", {"i": i}, (shared.id,))]
            for i in range(sets)
        },
        shared=[shared],
    )


def run_size(db: Database, sets: int, repeat: int) -> dict[str, Any]:
    store = DesiredStateStore(db)
    env, other = _environment(db), _environment(db)
    for env_id in (other, env):
        store.export(env_id, _full(sets))
    middle = f"set{sets // 2:06d}"
    changed = [ResourceRecord(f"std::R[a,name=r{sets // 2:06d}]", {"i": -1}, ("std::Shared[a,name=s]",))]
    store.export(env, ExportRequest("partial", sets={middle: changed}))
    results: dict[str, Any] = {}
    for label, (a, b) in {"diff_1_2": (1, 2), "diff_2_1": (2, 1)}.items():
        results[label] = timed_ms(partial(store.diff, env, a, b), repeat)
        diff = store.diff(env, a, b)
        results[label]["sets"] = [s.name for s in diff.sets]
        results[label]["resources"] = len(diff.resources)
    return {"sets": sets, "results": results}


def run(database_url: str | None, sizes: list[int], repeat: int, workdir: Path | None) -> dict[str, Any]:
    found = []
    for sets in sizes:
        with fresh_database(database_url, workdir, "diff") as db:
            db.create_schema()
            found.append(run_size(db, sets, repeat))
    return {
        "benchmark": "desired_state_diff",
        "backend": backend_name(database_url),
        "command": sys.argv,
        "repeat": repeat,
        "unit": "ms",
        "sizes": found,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.diff", description=__doc__)
    parser.add_argument("--sets", type=int, nargs="+", default=[1000, 100_000], help="sets per version")
    parser.add_argument("--repeat", type=int, default=30, help="timed diffs per direction")
    parser.add_argument(
        "--database-url", default=None, help="PostgreSQL URL (a fresh schema); SQLite file when absent"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    doc = run(args.database_url, args.sets, args.repeat, args.workdir)
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
