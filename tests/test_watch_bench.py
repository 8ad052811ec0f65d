"""``python -m benchmarks watch`` still runs and measures what it says, at a tiny size (never a time).

Performance is measured by the benchmark, never asserted (docs/architecture.md §8): this only
checks the document's shape and that every file was watched and every edit repaired.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.cli import main


def test_the_watch_benchmark_runs_at_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "watch.json"
    argv = ["watch", "--files", "20", "--per-dir", "10", "--edits", "3", "--gap", "0", "--idle", "0.1"]
    assert main([*argv, "--workdir", str(tmp_path / "db"), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    result = doc["result"]
    assert (doc["scenario"], doc["backend"]) == ("watch", "sqlite")
    assert (result["files"], result["edits"]) == (20, 3)
    assert result["repair_p50_ms"] <= result["repair_p99_ms"] <= result["repair_max_ms"]
    assert {"idle_cpu_percent_of_a_core", "watches_cpu_percent_of_a_core", "rss_growth_mb"} <= result.keys()
