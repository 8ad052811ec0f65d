"""The API's write path alone: concurrent port updates through the inventory facade, no HTTP.

Why beside ``e2e``: the end-to-end figure mixes HTTP, the API, the compile worker and the
machine's other load; on a shared 2-core machine its wall time moves a lot from run to run.
This scenario runs only what a PATCH runs behind the route (``InventoryFacade.update_instance``:
lock, check, transfer, enqueue, commit) from ``--threads`` threads at once, with no compile
worker, and reports the process CPU time per update (``time.process_time``), which other load
barely moves, beside the wall-clock rate. ``--no-group`` runs each update in a transaction of
its own (the behaviour before group commit) for an A/B comparison in one sitting.

``python -m benchmarks.write_path [--routers N] [--updates N] [--threads N] [--no-group]
[--database-url URL]``
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from typing import Any

from benchmarks.backend import fresh_database
from benchmarks.e2e_seed import MODEL, port_attributes, router_attributes
from benchmarks.stats import percentile
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api


def run(routers: int, updates: int, threads: int, group: bool, database_url: str | None) -> dict[str, Any]:
    """Seed, then ``updates`` distinct ports' MTU changed from ``threads`` threads; the figures."""
    with fresh_database(database_url, None, "write-path") as db:
        config = ServerConfig(
            database_url=db.url, model=str(MODEL), embedded_worker=False, group_commit=group
        )
        engine = build_api(config, db=db)
        engine.start()
        try:
            ctx = RequestContext.local()
            inventory = engine.facades.inventory
            router_ids = inventory.import_instances(ctx, "router", "up", router_attributes(routers))
            port_ids = inventory.import_instances(ctx, "port", "up", port_attributes(router_ids))
            targets = port_ids[: min(updates, len(port_ids))]
            latencies: list[float] = []
            errors: list[BaseException] = []
            lock = threading.Lock()
            chunks = [targets[i::threads] for i in range(threads)]

            def worker(ids: list[str]) -> None:
                for instance_id in ids:
                    started = time.perf_counter()
                    try:
                        inventory.update_instance(
                            ctx, "port", instance_id, current_version=1, attributes={"mtu": 9000}
                        )
                    except Exception as exc:  # counted and reported: a benchmark must not hide one
                        with lock:
                            errors.append(exc)
                        continue
                    with lock:
                        latencies.append(time.perf_counter() - started)

            pool = [threading.Thread(target=worker, args=(chunk,)) for chunk in chunks]
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join()
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            batches = engine.orchestrator.group.batches if engine.orchestrator.group else None
        finally:
            engine.stop()
    done = len(latencies)
    return {
        "backend": "sqlite" if database_url is None else "postgresql",
        "group_commit": group,
        "threads": threads,
        "updates": done,
        "errors": sorted({type(e).__name__ + ": " + str(e)[:120] for e in errors}),
        "updates_per_s": done / wall,
        "cpu_ms_per_update": 1000 * cpu / max(done, 1),
        "latency_ms": {q: 1000 * percentile(latencies, q) for q in (50, 95, 99)} if latencies else None,
        "group_batches": batches,
        "load_average": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_path", description=__doc__)
    parser.add_argument("--routers", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=40, help="concurrent callers (uvicorn's pool: 40)")
    parser.add_argument("--no-group", action="store_true", help="one transaction per update")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args(argv)
    result = run(args.routers, args.updates, args.threads, not args.no_group, args.database_url)
    print(json.dumps(result, indent=1))
    return 0 if not result["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
