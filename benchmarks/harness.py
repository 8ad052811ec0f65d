"""What every scenario does to the engine: start it, seed networks, change one, compile and drain.

Why these shortcuts, and only these:

* seeding goes through ``ApiRuntime.import_instances`` (validated attributes, straight into
  ``up``, in bulk): creating 100,000 instances through the lifecycle would run 100,000
  validation compiles and measure those instead;
* a change writes the instance row's ``active_attributes`` directly, in one write transaction:
  it stands in for the promote the lifecycle does, without the validation compile before it;
* compiles are requested as a row (``ApiRuntime.request_compile``) and run by
  ``engine.processing.drain()`` in this thread (``embedded_worker=False``), so the measured time is
  the worker's own (claim, run, export, finish) with no polling delay in it.

Everything is timed with ``time.perf_counter``; nothing here traces memory (tracemalloc would
slow the allocation-heavy refine several times and distort every figure).
"""

from __future__ import annotations

import cProfile
import gc
import resource
import sys
import time
from pathlib import Path
from typing import Any

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.store.database import Database
from lsm.store.tables import InstanceRow

REPO = Path(__file__).resolve().parent.parent
#: the model every scenario runs: one resource set per network, one shared resource
MODEL = REPO / "examples" / "networks"
ENTITY = "network"
STATE = "up"


class BenchmarkError(RuntimeError):
    """A run that can not be measured (a compile failed, a count is wrong): never a slow one."""


def peak_rss_mb() -> float:
    """The process's peak resident set size so far, in MB (a high-water mark: it never drops)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KB else


def start_engine(db: Database) -> ApiRuntime:
    """A started engine on ``db`` running the networks model, with no compile worker thread."""
    config = ServerConfig(database_url=db.url, model=str(MODEL), embedded_worker=False)
    engine = build_api(config, db=db)
    engine.start()
    return engine


def network_attributes(size: int, hosts: int) -> list[dict[str, Any]]:
    """``size`` attribute sets with unique names (the identity), each with ``hosts`` hosts."""
    return [{"name": f"net-{i:07d}", "hosts": hosts} for i in range(size)]


def seed_networks(engine: ApiRuntime, size: int, hosts: int) -> tuple[list[str], float]:
    """Import ``size`` networks in state ``up`` in one bulk call; their ids and the seconds it took."""
    attribute_sets = network_attributes(size, hosts)
    started = time.perf_counter()
    ids = engine.facades.inventory.import_instances(RequestContext.local(), ENTITY, STATE, attribute_sets)
    return ids, time.perf_counter() - started


def change_hosts(engine: ApiRuntime, instance_id: str, base_hosts: int) -> int:
    """Change the active ``hosts`` of one network (one set changes); returns the new value.

    Alternates between ``base_hosts + 1`` and ``base_hosts``, so the set always really changes
    (an unchanged set would be skipped by its content hash) and the size stays about the same.
    """
    with engine.db.write() as session:
        row = session.get(InstanceRow, instance_id)
        if row is None or row.active_attributes is None:
            raise BenchmarkError(f"network {instance_id} has no active attributes")
        current = int(row.active_attributes["hosts"])
        new = base_hosts + 1 if current <= base_hosts else base_hosts
        row.active_attributes = {**row.active_attributes, "hosts": new}
        row.version += 1
        session.add(row)
    return new


class GcWatch:
    """Time spent in the cyclic garbage collector, and collections per generation, while open.

    Why: a compile keeps ~10 objects per resource alive at once, so every collection of the
    oldest generation traverses the whole heap; profilers charge that time to whatever line
    happened to allocate, which hides it. ``gc.callbacks`` sees every collection directly.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections[info["generation"]] += 1

    def __enter__(self) -> GcWatch:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *_exc: object) -> None:
        gc.callbacks.remove(self._callback)


def compile_and_drain(
    engine: ApiRuntime,
    kind: str,
    instance_ids: list[str] | None = None,
    *,
    profiler: cProfile.Profile | None = None,
    incremental: bool | None = None,
) -> dict[str, Any]:
    """Request one compile, run the queue dry in this thread, and summarize its report.

    ``wall_s`` runs from the request to the end of the drain (claim, run, export, finish and the
    periodic desired-state retention). The report's timings are the runner's own, in seconds,
    plus two derived ones: ``request`` (building the export request from the refined resources,
    which the runner's stages leave out) and ``overhead`` (the wall time outside the runner).
    ``result_s`` runs from the request to the compile's ``finished_at`` (its result written, in
    the transaction that commits it): the latency of the change itself, without the drain's
    last look for more work. ``cpu_s`` is this process's CPU time over the same span: on a busy
    machine it moves far less than the wall time (on SQLite it includes the database's work; on
    PostgreSQL it does not).
    ``profiler`` (cProfile) is enabled over exactly that span; its times are then inflated.
    """
    started, cpu_started, epoch = time.perf_counter(), time.process_time(), time.time()
    if profiler is not None:
        profiler.enable()
    try:
        with GcWatch() as gc_watch:
            requested = engine.facades.compiles.request_compile(
                RequestContext.local(), kind=kind, instance_ids=instance_ids, incremental=incremental
            )
            engine.processing.drain()
    finally:
        if profiler is not None:
            profiler.disable()
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    done = engine.facades.compiles.get_compile(RequestContext.local(), requested.id)
    if done.status != "success":
        error = done.report.get("error", {})
        raise BenchmarkError(f"{kind} compile {done.id} ended {done.status}: {error.get('message', error)}")
    report = done.report
    timings = {key: float(value) for key, value in report.get("timings", {}).items()}
    total = timings.get("total", 0.0)
    accounted = timings.get("select", 0.0) + timings.get("refine_total", 0.0) + timings.get("export", 0.0)
    timings["request"] = max(total - accounted, 0.0)
    timings["overhead"] = max(wall - total, 0.0)
    version = (
        None
        if done.desired_state_version is None
        else engine.store.get_version(engine.context(None).env_id, done.desired_state_version)
    )
    return {
        "wall_s": wall,
        "result_s": None if done.finished_at is None else done.finished_at.timestamp() - epoch,
        "cpu_s": cpu,
        "compile_id": done.id,
        "ran_as": report.get("ran_as"),
        # why a full compile refined everything (absent: it was incremental), and its tree counts
        "complete": report.get("complete"),
        "incremental": report.get("incremental"),
        "version_resources": None if version is None else version.resource_count,
        "desired_state_version": done.desired_state_version,
        "instances": report.get("instances"),
        "resources": report.get("resources"),
        "sets": report.get("sets"),
        "sets_replaced": report.get("sets_replaced"),
        "sets_deleted": len(report.get("sets_deleted") or []),
        "timings": timings,
        "gc_s": gc_watch.seconds,
        "gc_collections": gc_watch.collections,
        "profiled": profiler is not None,
    }


def profile_path(directory: Path | None, *parts: object) -> Path | None:
    """``<directory>/<part>-<part>....prof`` (the directory created), or None without a directory."""
    if directory is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    return directory / ("-".join(str(p) for p in parts) + ".prof")


def new_profiler(path: Path | None) -> cProfile.Profile | None:
    return None if path is None else cProfile.Profile()


def expect_resources(run: dict[str, Any], expected: int, what: str, *, stored: bool = False) -> None:
    """Refuse a run whose compile produced another number of resources than the model implies.

    ``stored``: check the stored version's count instead of the report's (an incremental full
    compile refines, and reports, only the trees that changed).
    """
    key = "version_resources" if stored else "resources"
    if run.get(key) != expected:
        raise BenchmarkError(f"{what}: expected {expected} resources, found {run.get(key)} ({key})")
