"""``benchmarks.diff`` still runs at a tiny size on every backend (times are never asserted)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.diff import main


def test_diff_benchmark_runs(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    url = None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]
    argv = ["--sets", "50", "--repeat", "2", "--workdir", str(tmp_path), "--json", str(out)]
    assert main([*argv, *(["--database-url", url] if url else [])]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"] == ("sqlite" if backend == "sqlite" else "postgresql")
    [size] = doc["sizes"]
    for direction in ("diff_1_2", "diff_2_1"):
        assert size["results"][direction]["sets"] == ["set000025"]
        assert size["results"][direction]["resources"] == 1
