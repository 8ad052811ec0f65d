"""``benchmarks.metrics`` still runs at a tiny size on every backend (times are never asserted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.metrics import QUEUED, main


def test_metrics_benchmark_runs_and_scrapes_what_it_seeded(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    url = None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]
    argv = ["--sizes", "200", "--repeat", "2", "--workdir", str(tmp_path), "--json", str(out)]
    assert main([*argv, *(["--database-url", url] if url else [])]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"] == ("sqlite" if backend == "sqlite" else "postgresql")
    [result] = doc["results"]
    assert result["instances"] == 200 and result["compile_history"] == 200 - QUEUED
    assert {"median", "p95"} <= result["snapshot_ms"].keys() and {"median", "p95"} <= result[
        "scrape_ms"
    ].keys()
    assert result["samples"] > 0
