"""``benchmarks.export_failure`` still runs at a tiny size on every backend (times are never
asserted): every waiting instance is moved and logged, a few statements per chunk."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.export_failure import main


def test_export_failure_benchmark_moves_every_waiting_instance(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    url = None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]
    argv = ["--sizes", "1200", "--workdir", str(tmp_path), "--json", str(out)]
    assert main([*argv, *(["--database-url", url] if url else [])]) == 0
    [result] = json.loads(out.read_text())["sizes"]
    assert (result["instances"], result["moved"], result["event_lines"]) == (1200, 1200, 1200)
    # not a statement per instance: the waiting read, and per chunk of 500 a lock, a move and
    # (one executemany for all) the event lines, plus the compile's own record
    assert result["statements"] < 20
