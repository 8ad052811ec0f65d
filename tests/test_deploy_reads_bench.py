"""``benchmarks.deploy_reads`` still runs at a tiny size on every backend (times are never asserted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.deploy_reads import main


def test_deploy_reads_benchmark_runs(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    url = None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]
    argv = ["--resources", "300", "--repeat", "2", "--workdir", str(tmp_path), "--json", str(out)]
    assert main([*argv, *(["--database-url", url] if url else [])]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"] == ("sqlite" if backend == "sqlite" else "postgresql")
    assert set(doc["results"]) >= {"list_first_page", "status_counts", "instance_progress_50"}
    # every 100th resource failed and the next one skipped: 3 + 3 go back to pending
    assert doc["results"]["schedule_redeploy_failed_and_skipped"]["rows"] == 6
