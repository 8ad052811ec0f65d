"""``benchmarks.compliance`` still runs at a tiny size on every backend (times are never asserted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.compliance import main


def test_compliance_benchmark_runs(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    url = None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]
    argv = ["--resources", "50", "--agents", "3", "--workdir", str(tmp_path), "--json", str(out)]
    assert main([*argv, *(["--database-url", url] if url else [])]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"] == ("sqlite" if backend == "sqlite" else "postgresql")
    assert (doc["resources"], doc["parts"], doc["counts"]) == (50, 3, {"in_sync": 50})
