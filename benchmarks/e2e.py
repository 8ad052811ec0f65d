"""The ``e2e`` scenario: operators' updates over real HTTP, until the desired state holds them.

Why end to end: the ``full`` and ``partial`` scenarios time the compiler alone; an operator
sees the API, the lifecycle, the compile queue, the validation and exporting compiles and the
database together, under concurrency. So this scenario runs the real command lines:

1. a fresh database (``benchmarks.backend.fresh_database_url``);
2. seed ``routers`` x 4 ports of ``examples/router_port`` in ``up`` plus one full compile, in a
   subprocess (``benchmarks.e2e_seed``), before any server runs;
3. ``lsm server`` and ``workers`` extra ``lsm worker`` processes on it (``benchmarks.processes``);
   the server starts ``server_workers`` worker processes of its own (its default when
   ``None``; 0: compiles in the server process); with ``server_worker=False`` the server runs
   ``--no-worker`` and the compiles run only in the ``lsm worker`` processes (on SQLite:
   exactly one). CPU is counted over each process's whole tree;
4. read the ports, PATCH the MTU of ``updates`` random ones at once (``benchmarks.load``);
5. wait until every accepted update is settled, verify the latest desired state, and read the
   compile history (``benchmarks.completion``);
6. stop every process and drop the database, whatever happened;
7. send the same burst to an endpoint that does nothing (``benchmarks.floor``): the latency
   this machine's HTTP stack gives any server, printed beside the real one.

Every wait is bounded by ``timeout`` seconds (from the first PATCH) and every loop by a count.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks import completion, load
from benchmarks.backend import backend_name, fresh_database_url
from benchmarks.e2e_seed import MODEL, PORTS_PER_ROUTER
from benchmarks.floor import measure_floor
from benchmarks.harness import REPO, BenchmarkError
from benchmarks.processes import HOST, Processes, Started, children_of, free_port, lsm_command
from benchmarks.stats import quantiles

#: bounds of the steps before the load (seconds)
SEED_TIMEOUT_S = 1800.0
HEALTH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class E2eOptions:
    routers: int = 10_000
    updates: int = 1_000
    concurrency: int | None = None  # None: as many as updates
    workers: int = 0
    #: compiles in the server process too (``False``: ``lsm server --no-worker``)
    server_worker: bool = True
    #: ``lsm server --workers N``: worker processes the server starts (0: compiles in the server
    #: process itself, the default before it supervised workers); ``None``: the server's default
    server_workers: int | None = None
    timeout: float = 600.0
    database_url: str | None = None
    workdir: Path | None = None
    rng_seed: int = 0
    poll_s: float = 0.5

    @property
    def in_flight(self) -> int:
        return self.concurrency or self.updates


def run_e2e(options: E2eOptions, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the scenario once; the result (``benchmarks.e2e_cli`` prints it for people).

    Raises ``BenchmarkError`` for a run that can not be measured or whose result is wrong.
    ``out`` (filled in place, also returned) keeps what was measured before a failure, with the
    processes' exit codes and log tails, for the error report.
    """
    if options.updates < 1 or options.in_flight < 1:
        raise BenchmarkError("--updates and --concurrency must be at least 1")
    if not options.server_worker and options.workers < 1:
        raise BenchmarkError("--no-server-worker needs --workers 1 or more: someone must compile")
    out = {} if out is None else out
    with served_run(options, out, "e2e", server_worker=options.server_worker) as (processes, base_url, url):
        for i in range(options.workers):
            processes.start(
                f"worker-{i}", [*lsm_command(), "worker", "--model", str(MODEL), "--database", url]
            )
        out.update(asyncio.run(_drive(base_url, options, processes)))
        out["peak_rss_mb"] = {s.name: _peak_rss_mb(s) for s in processes.started}
        out["cpu_s"] = {s.name: _cpu_seconds(s) for s in processes.started}
    # the same burst against an endpoint that does nothing, once every process above stopped
    with tempfile.TemporaryDirectory(prefix="lsm-bench-floor-", dir=options.workdir) as tmp:
        try:
            out["floor"] = measure_floor(options.updates, options.in_flight, Path(tmp), options.timeout)
        except BenchmarkError as exc:  # the run's own figures stand; the table says why no floor
            out["floor"] = {"error": str(exc)}
    return out


@contextmanager
def served_run(
    options: E2eOptions, out: dict[str, Any], scenario: str, *, server_worker: bool
) -> Iterator[tuple[Processes, str, str]]:
    """What every e2e mode shares: a fresh database seeded with the inventory (before any server
    runs) and an ``lsm server`` on it; yields its processes, the server's base URL and the
    database URL. ``out`` gets the run's header and seed first, and on the way out every
    process's exit code and log warnings (their log tails when the run failed)."""
    if options.workdir is not None:
        options.workdir.mkdir(parents=True, exist_ok=True)
    out |= {
        # other work on the machine skews every figure: the 1-minute load when the run started
        "load_average_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "backend": backend_name(options.database_url),
        "routers": options.routers,
        "ports": options.routers * PORTS_PER_ROUTER,
        "updates": options.updates,
        "concurrency": options.in_flight,
        "workers": options.workers,
        "server_worker": server_worker,
        "server_workers": options.server_workers,
    }
    with (
        tempfile.TemporaryDirectory(prefix=f"lsm-bench-{scenario}-run-", dir=options.workdir) as tmp,
        fresh_database_url(options.database_url, options.workdir, scenario) as url,
    ):
        run_dir = Path(tmp)
        out["seed"] = _seed(url, options.routers, run_dir)
        with Processes(run_dir, cwd=run_dir) as processes:
            port = free_port()
            base_url = f"http://{HOST}:{port}"
            # compiles only: the example's resources have no handlers here, so no deploy agent
            argv = [*lsm_command(), "server", "--model", str(MODEL), "--database", url, "--no-agent"]
            if not server_worker:
                argv.append("--no-worker")
            elif options.server_workers is not None:
                argv += ["--workers", str(options.server_workers)]
            server = processes.start("server", [*argv, "--host", HOST, "--port", str(port)])
            out["server_start_s"] = processes.wait_healthy(server, base_url, HEALTH_TIMEOUT_S)
            try:
                yield processes, base_url, url
            except BaseException:
                out["logs"] = {s.name: s.tail(40) for s in processes.started}
                raise
            finally:
                out["exit_codes"] = processes.stop_all()
                out["log_warnings"] = {s.name: s.warnings() for s in processes.started}


def _seed(url: str, routers: int, run_dir: Path) -> dict[str, Any]:
    """Run ``benchmarks.e2e_seed`` in its own interpreter; its summary plus the wall time."""
    result_file = run_dir / "seed.json"
    command = [sys.executable, "-m", "benchmarks.e2e_seed", "--database", url, "--routers", str(routers)]
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    started = time.perf_counter()
    completed = subprocess.run(
        [*command, "--out", str(result_file)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=SEED_TIMEOUT_S,
        check=False,
    )
    if completed.returncode != 0 or not result_file.is_file():
        raise BenchmarkError(f"seeding failed (status {completed.returncode}):\n{completed.stderr[-3000:]}")
    seeded: dict[str, Any] = json.loads(result_file.read_text())
    return {**seeded, "wall_s": time.perf_counter() - started}


async def _drive(base_url: str, options: E2eOptions, processes: Processes) -> dict[str, Any]:
    """Steps 4 and 5 of the module docstring, over one async client."""
    rng = random.Random(options.rng_seed)
    limits = load.client_limits(options.in_flight)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120.0) as client:
        ports = await load.list_instances(client, "port")
        if len(ports) != options.routers * PORTS_PER_ROUTER:
            raise BenchmarkError(f"the server lists {len(ports)} ports, expected {options.routers * 4}")
        before_load = {c["id"] for c in await completion.list_compiles(client, stop_at=set())}
        targets = load.choose_targets(ports, options.updates, rng)
        deadline = time.monotonic() + options.timeout
        cpu_before = _cpu_now(processes)
        burst = asyncio.create_task(
            load.patch_all(base_url, targets, concurrency=options.in_flight, deadline=deadline)
        )
        # a port the burst does not change, read while it runs
        changed = {t.id for t in targets}
        untouched = next(p["id"] for p in ports if p["id"] not in changed)
        try:
            reads = await load.read_during(base_url, f"{load.INVENTORY}/port/{untouched}", burst)
        except BaseException:
            burst.cancel()
            raise
        results = await burst
        accepted = {r.id for r in results if r.accepted}
        if not accepted:
            raise BenchmarkError(f"no update was accepted: {load.errors_by_kind(results)}")
        settled = await completion.wait_until_settled(
            client,
            accepted,
            deadline=deadline,
            poll_s=options.poll_s,
            check_alive=processes.check_alive,
        )
        cpu_load = _cpu_spent(cpu_before, _cpu_now(processes))
        compiles = await completion.list_compiles(client, stop_at=before_load)
        verified = await completion.verify(client, [t for t in targets if t.id in accepted])
    analysis = completion.analyze(compiles, results)
    return {
        **_summary(results, analysis, settled, verified),
        "cpu_during_load_s": cpu_load,
        "read_during_burst_s": quantiles(reads),
    }


def _cpu_now(processes: Processes) -> dict[str, float | None]:
    """CPU seconds so far of every started process and of this load generator ("client")."""
    return {"client": time.process_time(), **{s.name: _cpu_seconds(s) for s in processes.started}}


def _cpu_spent(before: dict[str, float | None], after: dict[str, float | None]) -> dict[str, float]:
    """CPU seconds each process spent between two ``_cpu_now`` readings: from the first PATCH
    to the last update settled, i.e. the cost of the load itself, without start-up, the
    listing before it and the verification after it (which the whole-run ``cpu_s`` includes)."""
    return {name: a - b for name, a in after.items() if a is not None and (b := before.get(name)) is not None}


def _summary(
    results: list[load.PatchResult],
    analysis: dict[str, Any],
    settled: dict[str, Any],
    verified: dict[str, Any],
) -> dict[str, Any]:
    accepted = [r for r in results if r.accepted]
    first_sent = min(r.sent_at for r in results)
    end_at: float = analysis["end_at"]
    latencies = [r.latency_s for r in results if r.status is not None]
    completions = list(analysis["completion_s"].values())
    return {
        "accepted": len(accepted),
        "errors": load.errors_by_kind(results),
        "updates_per_s": len(results) / (end_at - first_sent),
        "duration_s": end_at - first_sent,
        "all_accepted_s": max(r.answered_at for r in accepted) - first_sent,
        "patch_latency_s": quantiles(latencies),
        "completion_s": quantiles(completions),
        "compiles": analysis["counts"],
        "exporting_runs": analysis["exporting_runs"],
        "compile_stages_s": analysis["stages"],
        # the worker's share of the run: busy = some compile running; the rest is claiming,
        # waiting for the write lock or the GIL, and idle polling
        "compiles_busy_s": completion.busy_seconds(analysis["runs"], first_sent, end_at),
        "compile_runs": analysis["runs"],
        "last_compile": analysis["last_compile"],
        "settled": settled,
        "verified": verified,
        "patches": [r.as_dict() for r in results],
        "export_per_update": analysis["export_per_update"],
    }


def _peak_rss_mb(started: Started) -> float | None:
    """The process's peak resident memory (VmHWM), read before it is stopped; None off Linux."""
    try:
        for line in Path(f"/proc/{started.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _cpu_seconds(started: Started) -> float | None:
    """CPU time (user + system) the process and its descendants used so far: the worker
    processes ``lsm server`` starts, and the compile processes under every worker, included
    (those that ended and were reaped count through their parent's children's time). On a
    shared machine it moves far less than the wall time, so it tells a slow run from a starved
    one. None off Linux."""
    total = _tree_ticks(started.process.pid)
    return None if total is None else total / os.sysconf("SC_CLK_TCK")


def _tree_ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = children_of(pid)
    except (OSError, IndexError, ValueError):
        return None
    # utime, stime, and the user and system time of waited-for children
    own = sum(int(fields[i]) for i in (11, 12, 13, 14))
    return own + sum(_tree_ticks(child) or 0 for child in children)
