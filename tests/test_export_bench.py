"""``benchmarks.export`` still runs at a tiny size on every backend (times are never asserted):
it starts ``lsm server``, stores a base, and runs ``lsm export --partial`` as a process."""

from __future__ import annotations

import json
import os
from pathlib import Path

from benchmarks.export import main


def test_export_benchmark_runs(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    url = None if backend == "sqlite" else os.environ["LSM_TEST_POSTGRES_URL"]
    argv = ["--networks", "20", "--repeat", "2", "--workdir", str(tmp_path), "--json", str(out)]
    assert main([*argv, *(["--database-url", url] if url else [])]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"] == ("sqlite" if backend == "sqlite" else "postgresql")
    assert doc["base_resources"] == 101
    assert doc["lsm_export_partial_process_ms"]["median"] > 0
    assert doc["lsm_export_partial_process_cpu_ms"]["median"] > 0
    # 1 full + 2 exports by the command + 2 from the client: the last one set network 0 to 5 hosts
    assert doc["last_version"]["version"] == 5
    assert doc["last_version"]["sets"] == 20
    assert len(doc["last_version"]["network_0"]) == 5
