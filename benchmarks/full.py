"""The ``full`` scenario for one size: a full compile, stage by stage and end to end.

Why two fresh databases per size: the end-to-end runs must start from an EMPTY desired state
(the first full export writes everything), and so must the stand-alone store stage; running
one after the other on one database would hand the second a populated store (where an
unchanged full export writes nothing). So:

1. **end to end** (database 1): seed, then the compile worker runs a full compile over the
   empty desired state (``first``); one network changes; a second full compile (``second``,
   incremental: only the changed tree is refined, one set rewritten); another network changes;
   a full compile with ``incremental: false`` (``complete``: every tree refined, one set
   rewritten), what the second one cost before incremental compiles. Timings are the compile
   reports'.
2. **stages** (database 2): seed again, then time on their own, in the runner's order, what a
   full compile does: load the exporting instances (``CompileRunner._load_exporting``), refine
   (``lsm.model.refine``), build the export request (``CompileRunner._export_request``) and store
   it (``DesiredStateStore.export``, its own committed transaction).

The end-to-end part runs first so that ``peak_rss_e2e_mb`` is the peak of seeding plus the real
compile alone; ``peak_rss_mb`` is the peak of the whole size (both parts).
"""

from __future__ import annotations

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
from lsm.model import refine
from lsm.runtime.wiring import ApiRuntime

RUNS = ("first", "second", "complete")


def run_full_size(
    size: int,
    *,
    hosts: int,
    database_url: str | None,
    workdir: Path | None,
    rng_seed: int = 0,
    profile_dir: Path | None = None,
) -> dict[str, Any]:
    """Measure one size; every time in seconds, memory in MB (see the module docstring).

    ``profile_dir``: profile the end-to-end compiles with cProfile into
    ``<dir>/full-<backend>-<size>-{first,second,complete}.prof`` (their times are then inflated).
    """
    expected = size * hosts + 1
    rng = random.Random(rng_seed)
    out: dict[str, Any] = {
        "size": size,
        "hosts": hosts,
        "backend": backend_name(database_url),
        "expected_resources": expected,
    }
    with fresh_database(database_url, workdir, "full") as db:
        engine = start_engine(db)
        try:
            ids, out["seed_s"] = seed_networks(engine, size, hosts)
            out["rss_after_seed_mb"] = peak_rss_mb()
            paths = {run: profile_path(profile_dir, "full", out["backend"], size, run) for run in RUNS}
            profilers = {run: new_profiler(path) for run, path in paths.items()}
            first = compile_and_drain(engine, "full", profiler=profilers["first"])
            expect_resources(first, expected, "first full compile", stored=True)
            changed = rng.choice(ids)
            new_hosts = change_hosts(engine, changed, hosts)
            second = compile_and_drain(engine, "full", profiler=profilers["second"])
            after_second = expected + new_hosts - hosts
            expect_resources(second, after_second, "second full compile", stored=True)
            if second.get("complete") is not None:
                raise BenchmarkError(f"second full compile ran complete: {second['complete']}")
            changed_again = rng.choice([i for i in ids if i != changed])
            newer_hosts = change_hosts(engine, changed_again, hosts)
            complete = compile_and_drain(engine, "full", profiler=profilers["complete"], incremental=False)
            expect_resources(
                complete, after_second + newer_hosts - hosts, "complete full compile", stored=True
            )
            out["end_to_end"] = {
                "first": first,
                "second": {**second, "changed": changed},
                "complete": {**complete, "changed": changed_again},
            }
            for run, profiler in profilers.items():
                if profiler is not None:
                    profiler.dump_stats(str(paths[run]))
                    out["end_to_end"][run]["profile"] = str(paths[run])
        finally:
            engine.stop()
    out["peak_rss_e2e_mb"] = peak_rss_mb()
    with fresh_database(database_url, workdir, "stages") as db:
        engine = start_engine(db)
        try:
            seed_networks(engine, size, hosts)
            out["stages"] = _stages(engine, expected)
        finally:
            engine.stop()
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def _stages(engine: ApiRuntime, expected: int) -> dict[str, Any]:
    """Time the four stages of a full compile on their own, over an empty desired state."""
    ctx = engine.context(None)
    runner = engine.processing.runner
    started = time.perf_counter()
    instances = runner._load_exporting(ctx)
    loaded = time.perf_counter()
    result = refine(ctx.model, instances)
    refined = time.perf_counter()
    request = runner._export_request(result, full=True, roots=[], compile_id="benchmark-stages")
    built = time.perf_counter()
    info = engine.store.export(ctx.env_id, request)
    stored = time.perf_counter()
    if result.resource_count != expected or info.resource_count != expected:
        raise BenchmarkError(
            f"stages: expected {expected} resources, refined {result.resource_count}, "
            f"stored {info.resource_count}"
        )
    return {
        "load_s": loaded - started,
        "refine_s": refined - loaded,
        "refine": {key: float(value) for key, value in result.timings.items()},
        "request_s": built - refined,
        "export_s": stored - built,
        "total_s": stored - started,
        "instances": sum(len(dicts) for dicts in instances.values()),
        "resources": result.resource_count,
        "sets": len(result.sets),
        "sets_replaced": len(info.sets_replaced),
    }
