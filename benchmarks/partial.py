"""The ``partial`` scenario for one size: ONE instance update as a partial compile plus export.

Why this shape: the promise of partial compiles is that an update costs what it touches, not
what the environment holds. So the base (every network, one full compile) is stored first,
and then, ``repeat`` times, one random network changes its active ``hosts`` (standing in for
the lifecycle's promote, see ``benchmarks.harness``) and a partial compile of that one id is
requested and drained. Each sample records the end-to-end wall time (request to drained), the
time to the compile's result (request to its ``finished_at``: the drain's last look for more
work left out) and the compile report's stages; the summary gives median and p95 per stage. Comparing the
medians across sizes is the flatness check (``benchmarks.report``).
"""

from __future__ import annotations

import cProfile
import random
import time
from pathlib import Path
from typing import Any

from benchmarks.backend import backend_name, fresh_database
from benchmarks.harness import (
    BenchmarkError,
    change_hosts,
    compile_and_drain,
    expect_resources,
    new_profiler,
    peak_rss_mb,
    profile_path,
    seed_networks,
    start_engine,
)
from benchmarks.stats import summarize
from lsm.runtime.wiring import ApiRuntime


def run_partial_size(
    size: int,
    *,
    hosts: int,
    repeat: int,
    database_url: str | None,
    workdir: Path | None,
    rng_seed: int = 0,
    profile_dir: Path | None = None,
) -> dict[str, Any]:
    """Measure one size; every time in seconds, memory in MB (see the module docstring).

    ``profile_dir``: profile every sample's compile (not the base, not the updates) with one
    cProfile into ``<dir>/partial-<backend>-<size>.prof`` (the times are then inflated).
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    rng = random.Random(rng_seed)
    expected = size * hosts + 1
    out: dict[str, Any] = {
        "size": size,
        "hosts": hosts,
        "repeat": repeat,
        "backend": backend_name(database_url),
        "expected_resources": expected,
    }
    with fresh_database(database_url, workdir, "partial") as db:
        engine = start_engine(db)
        try:
            ids, out["seed_s"] = seed_networks(engine, size, hosts)
            base = compile_and_drain(engine, "full")
            expect_resources(base, expected, "base full compile")
            out["base"] = base
            path = profile_path(profile_dir, "partial", out["backend"], size)
            profiler = new_profiler(path)
            samples = [_one_update(engine, rng.choice(ids), hosts, profiler) for _ in range(repeat)]
            if profiler is not None:
                profiler.dump_stats(str(path))
                out["profile"] = str(path)
        finally:
            engine.stop()
    out["samples"] = samples
    out["summary"] = _summary(samples)
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def _one_update(
    engine: ApiRuntime, instance_id: str, hosts: int, profiler: cProfile.Profile | None
) -> dict[str, Any]:
    """Change one network, then partial-compile it; the sample checks it rewrote exactly one set."""
    started = time.perf_counter()
    new_hosts = change_hosts(engine, instance_id, hosts)
    updated = time.perf_counter() - started
    run = compile_and_drain(engine, "partial", [instance_id], profiler=profiler)
    expect_resources(run, new_hosts + 1, f"partial compile of {instance_id}")
    if run["ran_as"] != "partial" or run["sets_replaced"] != 1:
        raise BenchmarkError(
            f"partial compile of {instance_id} ran as {run['ran_as']} and replaced "
            f"{run['sets_replaced']} sets (expected partial, 1)"
        )
    return {**run, "instance": instance_id, "hosts": new_hosts, "update_s": updated}


def _summary(samples: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median/p95/min/max/mean of the wall time, the update and each report stage, in seconds."""
    out = {
        "wall_s": summarize(s["wall_s"] for s in samples),
        "result_s": summarize(s["result_s"] for s in samples if s["result_s"] is not None),
        "cpu_s": summarize(s["cpu_s"] for s in samples),
        "gc_s": summarize(s["gc_s"] for s in samples),
        "update_s": summarize(s["update_s"] for s in samples),
    }
    keys = dict.fromkeys(key for s in samples for key in s["timings"])
    for key in keys:
        out[key] = summarize(s["timings"].get(key, 0.0) for s in samples)
    return out
