"""The JSON document of one benchmark run: what ran, where, on which code, and the verdicts.

Why so much context: a figure is only comparable with another one taken on the same machine,
backend and code. So each document records the command line, the machine (CPU count, Python,
SQLite and PostgreSQL versions), the git commit and whether ``lsm/`` had uncommitted changes,
next to the per-size results and the checks against the targets (docs/architecture.md §8).
Checks are reported, never enforced: a slow run still exits 0; only a broken run exits 1.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy
from sqlalchemy import text

from benchmarks.harness import REPO
from lsm.store.database import Database

RESULTS = REPO / "benchmarks" / "results"

#: the targets a run is checked against (seconds, MB)
FULL_5K_TARGET_S = 1.5
FULL_100K_TARGET_S = 60.0
FULL_100K_RSS_TARGET_MB = 2048.0
#: a full compile after one change: proportional to the change (issue 7)
FULL_100K_INCREMENTAL_TARGET_S = 1.0
PARTIAL_TARGET_S = 0.020
PARTIAL_FLAT_RATIO = 1.5
#: the end-to-end burst of issue 7: 10,000 routers x 4 ports, 1,000 PATCHes in flight at once
E2E_SCENARIO = {"routers": 10_000, "updates": 1_000, "concurrency": 1_000}
E2E_SQLITE_RATE_TARGET = 500.0
E2E_PATCH_P50_TARGET_S = 0.050
E2E_PATCH_P99_TARGET_S = 0.250
#: the reference loop: enough work to time, little enough to run before every document
_REFERENCE_ROUNDS = 15
_REFERENCE_SIZE = 10_000


def default_path(scenario: str, backend: str, now: datetime | None = None) -> Path:
    """``benchmarks/results/<scenario>-<backend>-<UTC timestamp>.json``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    return RESULTS / f"{scenario}-{backend}-{stamp}.json"


def machine_info(database_url: str | None) -> dict[str, Any]:
    """Where the run happened: enough to tell whether two documents may be compared."""
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_total_mb": _memory_total_mb(),
        # other work on the machine skews every figure: the 1/5/15-minute load when the run ended
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": sqlalchemy.__version__,
        "reference_loop_ms": reference_loop(),
    }
    if database_url is not None and not database_url.startswith("sqlite"):
        info["postgresql"] = _postgres_version(database_url)
    return info


def reference_loop(rounds: int = _REFERENCE_ROUNDS) -> dict[str, float]:
    """Timings of one fixed pure-Python workload (string formatting, dicts, JSON), in ms: the
    best round and the median one.

    Why: sessions run on machines of one kind whose speed still differs (the same code gave
    370-399 end-to-end updates/s on one and 250-280 on the next), and the CPU model string
    does not tell them apart. The best round is the machine's speed: two documents whose best
    rounds differ by more than a few percent measure the machine as much as the code. The
    median shows how much the machine was slowed meanwhile (on a shared virtual machine the
    same loop was seen to take 21 ms in one second and 34 ms in the next).
    """
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        counts: dict[str, int] = {}
        total = 0
        for i in range(_REFERENCE_SIZE):
            key = f"port-{i % 512}"
            counts[key] = counts.get(key, 0) + 1
            total += len(json.dumps({"id": key, "mtu": 1500 + i % 7000}))
        sorted(counts, key=counts.__getitem__)
        timings.append(time.perf_counter() - started)
    timings.sort()
    return {"best": round(timings[0] * 1000, 2), "median": round(timings[len(timings) // 2] * 1000, 2)}


def code_info() -> dict[str, Any]:
    """The commit measured, and whether ``lsm/`` or ``examples/`` differed from it.

    Taken when each size starts (``benchmarks.isolate``) and again for the document: on a
    shared working tree the code can change between two sizes of one run.
    """
    try:
        commit = _git("rev-parse", "HEAD").strip()
        dirty = _git("status", "--porcelain", "--", "lsm", "examples").splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty_files": []}
    return {"commit": commit, "dirty_files": [line[3:] for line in dirty]}


def document(
    scenario: str,
    backend: str,
    argv: list[str],
    parameters: dict[str, Any],
    results: list[dict[str, Any]],
    database_url: str | None,
    started_at: datetime,
) -> dict[str, Any]:
    """The whole JSON document of one run (see the module docstring)."""
    return {
        "scenario": scenario,
        "backend": backend,
        "command": [sys.executable, "-m", "benchmarks", *argv],
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "machine": machine_info(database_url),
        "code": code_info(),
        "parameters": parameters,
        "results": results,
        "checks": checks(scenario, backend, results),
    }


def checks(scenario: str, backend: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verdicts against the targets, for the sizes that were measured (others are skipped).

    ``e2e`` is checked only when it ran issue 7's burst (``E2E_SCENARIO``, not ``--drain``):
    the rate on SQLite, the PATCH latency on both backends. The worker-scaling target (two
    PostgreSQL workers against one) compares two runs, so no single document checks it.
    """
    if scenario == "e2e":
        return _e2e_checks(backend, results)
    by_size = {r["size"]: r for r in results if "error" not in r}
    out: list[dict[str, Any]] = []
    if scenario == "full":
        if 5000 in by_size:
            value = by_size[5000]["end_to_end"]["first"]["wall_s"]
            out.append(
                _check("full 5,000 networks end to end (first export) < 1.5 s", value, FULL_5K_TARGET_S)
            )
        if 100_000 in by_size:
            value = by_size[100_000]["end_to_end"]["first"]["wall_s"]
            out.append(
                _check("full 100,000 networks end to end (first export) < 60 s", value, FULL_100K_TARGET_S)
            )
            second = by_size[100_000]["end_to_end"]["second"]["wall_s"]
            out.append(
                _check(
                    "full 100,000 networks, 2nd full after 1 change (incremental) <= 1 s",
                    second,
                    FULL_100K_INCREMENTAL_TARGET_S,
                )
            )
            rss = by_size[100_000]["peak_rss_e2e_mb"]
            out.append(
                _check("full 100,000 networks peak RSS < 2 GB", rss, FULL_100K_RSS_TARGET_MB, unit="MB")
            )
        return out
    if not by_size:
        return out
    smallest, largest = by_size[min(by_size)], by_size[max(by_size)]
    p50 = largest["summary"]["wall_s"]["median"]
    if largest is not smallest:
        ratio = p50 / smallest["summary"]["wall_s"]["median"]
        name = f"partial p50 at {largest['size']:,} / p50 at {smallest['size']:,} <= 1.5 (flat)"
        out.append(_check(name, ratio, PARTIAL_FLAT_RATIO, unit="x"))
    if backend == "sqlite":
        out.append(_check(f"partial p50 at {largest['size']:,} < 20 ms (SQLite)", p50, PARTIAL_TARGET_S))
        p95 = largest["summary"]["wall_s"]["p95"]
        out.append(_check(f"partial p95 at {largest['size']:,} < 20 ms (SQLite)", p95, PARTIAL_TARGET_S))
    return out


def emit(doc: dict[str, Any], path: Path | None) -> None:
    """Print a result document, and also write it to ``path`` when one was asked for."""
    print(json.dumps(doc, indent=2, default=str))
    if path is not None:
        write_json(doc, path)


def write_json(doc: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path


def _e2e_checks(backend: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in results:
        if "error" in r or r.get("mode") == "drain":
            continue
        if any(r.get(key) != value for key, value in E2E_SCENARIO.items()):
            continue
        if backend == "sqlite":
            name = "e2e updates/s, 10,000 routers, 1,000 PATCHes at once >= 500 (SQLite)"
            out.append(_check(name, r["updates_per_s"], E2E_SQLITE_RATE_TARGET, unit="/s", at_least=True))
        latency = r["patch_latency_s"]
        out.append(
            _check("e2e PATCH latency p50 during the burst < 50 ms", latency["p50"], E2E_PATCH_P50_TARGET_S)
        )
        out.append(
            _check("e2e PATCH latency p99 during the burst < 250 ms", latency["p99"], E2E_PATCH_P99_TARGET_S)
        )
    return out


def _check(
    name: str, value: float, limit: float, *, unit: str = "s", at_least: bool = False
) -> dict[str, Any]:
    """One verdict: ``value`` at most ``limit`` (a time, a size), or at least it (a rate)."""
    ok = value >= limit if at_least else value <= limit
    return {"name": name, "value": value, "limit": limit, "unit": unit, "ok": ok}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_total_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _postgres_version(database_url: str) -> str | None:
    db = Database(database_url)
    try:
        with db.read() as session:
            return str(session.execute(text("SHOW server_version")).scalar_one())
    except Exception:  # a version we can't read must not cost the run its results
        return None
    finally:
        db.dispose()
