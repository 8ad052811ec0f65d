"""``python -m benchmarks e2e --drain``: how fast N ``lsm worker`` processes drain a queued burst.

Why apart from the plain ``e2e`` run: there the API, the load generator and the workers share
the 2-core machine at once, so the workers' scaling hides behind the API's CPU (a second worker
"adds nothing" because the API is what saturates). Here the phases are apart:

1. seed and start ``lsm server --no-worker`` (the API alone: no compile runs in it);
2. PATCH ``updates`` ports at once and wait until every PATCH is answered; the validation
   requests stay queued (nothing runs: no worker yet), which is checked, not assumed;
3. start ``workers`` ``lsm worker`` processes at once; the drain is timed from just before
   their start (their start-up included) to the last compile an update needed (its validation,
   then the exporting compile that holds it), read from the compile reports' ``finished_at``;
4. while they work, poll only the one-row questions (``completion.wait_until_settled``);
5. check the outcome: the desired state holds every update (``completion.verify``), every
   port was validated exactly once (its log has one ``update_start -> update_acknowledged``
   transfer: no validation ran twice), and the desired-state versions written during the drain
   are gap-free, one per successful exporting run (no export ran twice, none is missing).

Which worker ran which compile: the ``worker`` key of the compile report (the worker part of the
lease token, ``lsm-worker@host:pid:nonce``, written by the fenced finish); requests merged into
another are the worker's that ran their leader. The pid names the ``worker-i`` process.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from benchmarks import completion, load
from benchmarks.backend import backend_name
from benchmarks.e2e import (
    E2eOptions,
    _cpu_seconds,
    _peak_rss_mb,
    served_run,
)
from benchmarks.e2e_seed import MODEL, PORTS_PER_ROUTER
from benchmarks.harness import BenchmarkError
from benchmarks.processes import Processes, Started, lsm_command
from benchmarks.stats import quantiles

#: log reads in flight while checking that no validation ran twice (after the measurement)
LOG_READS = 8
VALIDATED = ("update_start", "update_acknowledged")
_PID = re.compile(r"@[^:]*:(\d+):")


def run_drain(options: E2eOptions, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the drain once; the result. ``out`` keeps what was measured before a failure."""
    if options.workers < 1:
        raise BenchmarkError("--drain needs --workers 1 or more")
    if backend_name(options.database_url) == "sqlite" and options.workers > 1:
        raise BenchmarkError("SQLite allows one `lsm worker`: --drain --workers 1")
    out = {} if out is None else out
    out["mode"] = "drain"
    with served_run(options, out, "drain", server_worker=False) as (processes, base_url, url):
        asyncio.run(_drive(base_url, url, options, processes, out))
        out["peak_rss_mb"] = {s.name: _peak_rss_mb(s) for s in processes.started}
        out["cpu_s"] = {s.name: _cpu_seconds(s) for s in processes.started}
    return out


async def _drive(
    base_url: str, url: str, options: E2eOptions, processes: Processes, out: dict[str, Any]
) -> None:
    rng = random.Random(options.rng_seed)
    limits = load.client_limits(options.in_flight)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120.0) as client:
        ports = await load.list_instances(client, "port")
        if len(ports) != options.routers * PORTS_PER_ROUTER:
            raise BenchmarkError(f"the server lists {len(ports)} ports, expected {options.routers * 4}")
        before_load = {c["id"] for c in await completion.list_compiles(client, stop_at=set())}
        versions_before = {v["version"] for v in await _versions(client)}
        targets = load.choose_targets(ports, options.updates, rng)
        deadline = time.monotonic() + options.timeout
        results = await load.patch_all(base_url, targets, concurrency=options.in_flight, deadline=deadline)
        accepted = {r.id for r in results if r.accepted}
        if not accepted:
            raise BenchmarkError(f"no update was accepted: {load.errors_by_kind(results)}")
        first_sent = min(r.sent_at for r in results)
        out["accept"] = {
            "accepted": len(accepted),
            "errors": load.errors_by_kind(results),
            "all_answered_s": max(r.answered_at for r in results) - first_sent,
            "patch_latency_s": quantiles([r.latency_s for r in results if r.status is not None]),
        }
        out["queued_before_drain"] = await _queued_before_drain(client, accepted, before_load)

        # the drain: every worker at once, timed from just before the first one starts
        out["load_average_at_drain"] = os.getloadavg()[0]
        cpu_before = machine_cpu()
        drain_start = time.time()
        workers = [
            processes.start(
                f"worker-{i}", [*lsm_command(), "worker", "--model", str(MODEL), "--database", url]
            )
            for i in range(options.workers)
        ]
        drain_deadline = time.monotonic() + options.timeout
        settled = await completion.wait_until_settled(
            client,
            accepted,
            deadline=drain_deadline,
            poll_s=options.poll_s,
            check_alive=processes.check_alive,
        )
        out["machine_cpu_busy"] = busy_share(cpu_before, machine_cpu())
        compiles = await completion.list_compiles(client, stop_at=before_load)
        analysis = completion.analyze(compiles, results)
        end_at: float = analysis["end_at"]
        runs = analysis["runs"]
        first_claim = min(r["started"] for r in runs)
        drain_s = end_at - drain_start
        out |= {
            "accepted": len(accepted),
            "drain_s": drain_s,
            "updates_per_s": len(accepted) / drain_s,
            # the workers' start-up (interpreter, model, connections) is part of the drain; the
            # rate from the first claim on is what the workers do once they run
            "first_claim_s": first_claim - drain_start,
            "updates_per_s_from_first_claim": len(accepted) / (end_at - first_claim),
            "settled": settled,
            "compiles": analysis["counts"],
            "exporting_runs": analysis["exporting_runs"],
            "compile_stages_s": analysis["stages"],
            "compiles_busy_s": completion.busy_seconds(runs, drain_start, end_at),
            "last_compile": analysis["last_compile"],
            "per_worker": per_worker(compiles, workers),
        }
        out["verified"] = await completion.verify(client, [t for t in targets if t.id in accepted])
        out["ran_once"] = await ran_once(client, accepted, compiles, versions_before)


def machine_cpu() -> tuple[int, int] | None:
    """The machine's CPU ticks so far (busy, total) from /proc/stat; None off Linux."""
    try:
        fields = [int(f) for f in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of all cores busy between two ``machine_cpu`` readings (everyone's work: ours,
    the database's and other people's): near 1.0 means a CPU-bound run, where more workers can
    not help."""
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


async def _versions(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    """Every desired-state version header, newest first."""
    out: list[dict[str, Any]] = []
    for page in range(load.MAX_PAGES):
        response = await client.get("/api/v1/desired_state", params={"limit": 1000, "offset": page * 1000})
        response.raise_for_status()
        batch: list[dict[str, Any]] = response.json()
        out.extend(batch)
        if len(batch) < 1000:
            return out
    raise BenchmarkError("the desired-state versions took too many pages")


async def _queued_before_drain(
    client: httpx.AsyncClient, accepted: set[str], before_load: set[str]
) -> dict[str, int]:
    """Before any worker runs: one queued validation per accepted update, nothing else moved."""
    compiles = await completion.list_compiles(client, stop_at=before_load)
    counts = Counter((c["kind"], c["status"]) for c in compiles)
    validated = Counter(i for c in compiles if c["kind"] == "validation" for i in c["requested_ids"])
    if counts != Counter({("validation", "queued"): len(accepted)}) or set(validated) != accepted:
        raise BenchmarkError(
            f"before the drain the queue should hold one validation per update: {dict(counts)}"
        )
    return {"queued_validations": len(compiles)}


def per_worker(compiles: list[dict[str, Any]], workers: list[Started]) -> dict[str, dict[str, int]]:
    """Per worker process, per kind: requests it finished, those that ran (not merged into
    another: ``runs``), and its claims (``claims``: distinct start times; a round of batched
    validations is one claim of many requests that each keep their own report).

    The worker of a compile is its report's ``worker`` (the lease holder that finished it); a
    request merged into another belongs to the worker of the one it was merged into.
    """
    names = {str(w.process.pid): w.name for w in workers}
    by_id = {c["id"]: c for c in compiles}
    out: dict[str, dict[str, int]] = {}
    claims: dict[str, set[tuple[str, str]]] = {}
    for c in compiles:
        leader = by_id.get(c["merged_into"] or c["id"], c)
        holder = (leader.get("report") or {}).get("worker")
        if holder is None:
            continue
        match = _PID.search(holder)
        name = names.get(match.group(1), holder) if match else holder
        counts = out.setdefault(name, {})
        counts[f"{c['kind']}_requests"] = counts.get(f"{c['kind']}_requests", 0) + 1
        if c["merged_into"] is None:
            counts[f"{c['kind']}_runs"] = counts.get(f"{c['kind']}_runs", 0) + 1
            claims.setdefault(name, set()).add((c["kind"], c["started_at"]))
    for name, started in claims.items():
        for kind, _ in started:
            out[name][f"{kind}_claims"] = out[name].get(f"{kind}_claims", 0) + 1
    return dict(sorted(out.items()))


async def ran_once(
    client: httpx.AsyncClient, accepted: set[str], compiles: list[dict[str, Any]], versions_before: set[int]
) -> dict[str, Any]:
    """No request ran twice, none is missing; fail loudly otherwise.

    - validations: each accepted port's log has exactly one ``update_start -> update_acknowledged``
      transfer (a validation that ran twice would transfer twice, or be refused the second time);
    - exports: the versions written since the load are gap-free and one per successful exporting
      run (an export that ran twice writes a version more; a lost one, a version less).
    """
    semaphore = asyncio.Semaphore(LOG_READS)

    async def validations(port_id: str) -> int:
        async with semaphore:
            response = await client.get(f"{load.INVENTORY}/port/{port_id}/log")
            response.raise_for_status()
            return sum(
                1 for e in response.json() if (e["source"], e["target"]) == VALIDATED and not e["is_error"]
            )

    ids = sorted(accepted)
    counts = await asyncio.gather(*(validations(i) for i in ids))
    wrong = {i: n for i, n in zip(ids, counts, strict=True) if n != 1}
    if wrong:
        sample = dict(list(wrong.items())[:5])
        raise BenchmarkError(f"{len(wrong)} ports were not validated exactly once: {sample}")
    new = sorted(v["version"] for v in await _versions(client) if v["version"] not in versions_before)
    exported = [
        c
        for c in compiles
        if c["kind"] in completion.EXPORTING and c["merged_into"] is None and c["status"] == "success"
    ]
    # a run that changed nothing names the version it found; only new versions must match
    versions_of_runs = sorted(
        c["desired_state_version"] for c in exported if c["desired_state_version"] not in versions_before
    )
    if not new or new != list(range(new[0], new[0] + len(new))) or new != versions_of_runs:
        raise BenchmarkError(
            f"desired-state versions since the load {new[:10]}.. do not match the exporting runs' "
            f"{versions_of_runs[:10]}.. (gap, duplicate or missing export)"
        )
    return {"validated_once": len(ids), "new_versions": len(new), "exporting_runs_success": len(exported)}
