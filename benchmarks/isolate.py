"""One size of one scenario, in this process or in a fresh Python process.

Why a fresh process per size: peak memory is read from ``getrusage(RUSAGE_SELF).ru_maxrss``,
a high-water mark that never goes down, so a 1,000-network run after a 100,000-network run in
the same process would report the bigger one's peak. A fresh interpreter also starts every
size equally cold (model import, SQLAlchemy statement caches, pydantic validators).

The child is ``python -m benchmarks.isolate <job options> --out FILE``: it writes its result
(or ``{"size": ..., "error": ..., "traceback": ...}``) to ``FILE`` as JSON, and its progress and
warnings go to the terminal through stderr. ``run_in_process`` is the same measurement without
the process (the smoke test and debugging use it; exceptions propagate there).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.full import run_full_size
from benchmarks.harness import REPO
from benchmarks.partial import run_partial_size
from benchmarks.report import code_info

SCENARIOS = ("full", "partial")


@dataclass(frozen=True)
class SizeJob:
    """Everything one size of a scenario needs; crosses the process boundary as options."""

    scenario: str
    size: int
    hosts: int = 5
    repeat: int = 30
    database_url: str | None = None
    workdir: Path | None = None
    rng_seed: int = 0
    profile_dir: Path | None = None

    def to_argv(self) -> list[str]:
        argv = [self.scenario, "--size", str(self.size), "--hosts", str(self.hosts)]
        argv += ["--repeat", str(self.repeat), "--seed", str(self.rng_seed)]
        if self.database_url is not None:
            argv += ["--database-url", self.database_url]
        if self.workdir is not None:
            argv += ["--workdir", str(self.workdir)]
        if self.profile_dir is not None:
            argv += ["--profile", str(self.profile_dir)]
        return argv


def run_in_process(job: SizeJob) -> dict[str, Any]:
    """Measure ``job`` here, tagged with the code it ran (other commits may land between sizes)."""
    code = code_info()
    return {**_measure(job), "code": code}


def _measure(job: SizeJob) -> dict[str, Any]:
    """Measure ``job`` here; any failure raises."""
    if job.scenario == "full":
        return run_full_size(
            job.size,
            hosts=job.hosts,
            database_url=job.database_url,
            workdir=job.workdir,
            rng_seed=job.rng_seed,
            profile_dir=job.profile_dir,
        )
    if job.scenario == "partial":
        return run_partial_size(
            job.size,
            hosts=job.hosts,
            repeat=job.repeat,
            database_url=job.database_url,
            workdir=job.workdir,
            rng_seed=job.rng_seed,
            profile_dir=job.profile_dir,
        )
    raise ValueError(f"unknown scenario {job.scenario!r}; known: {', '.join(SCENARIOS)}")


def run_in_subprocess(job: SizeJob) -> dict[str, Any]:
    """Measure ``job`` in a fresh interpreter; a failure is an ``error`` entry, never an exception."""
    with tempfile.TemporaryDirectory(prefix="lsm-bench-job-") as tmp:
        result_file = Path(tmp) / "result.json"
        command = [sys.executable, "-m", "benchmarks.isolate", *job.to_argv(), "--out", str(result_file)]
        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        completed = subprocess.run(command, cwd=REPO, env={**os.environ, "PYTHONPATH": path}, check=False)
        if result_file.is_file():
            result: dict[str, Any] = json.loads(result_file.read_text())
            return result
        return {"size": job.size, "error": f"the benchmark process exited with status {completed.returncode}"}


def _parse(argv: list[str] | None) -> tuple[SizeJob, Path]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.isolate", description=__doc__)
    parser.add_argument("scenario", choices=SCENARIOS)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--hosts", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    job = SizeJob(
        args.scenario,
        args.size,
        args.hosts,
        args.repeat,
        args.database_url,
        args.workdir,
        args.seed,
        args.profile,
    )
    return job, args.out


def child_main(argv: list[str] | None = None) -> int:
    """The child's entry point: measure, write the result file, exit 0 (1 on failure)."""
    job, out = _parse(argv)
    try:
        result = run_in_process(job)
        status = 0
    except Exception as exc:
        result = {
            "size": job.size,
            "error": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(),
        }
        print(result["traceback"], file=sys.stderr)
        status = 1
    out.write_text(json.dumps(result, default=str))
    return status


if __name__ == "__main__":
    raise SystemExit(child_main())
