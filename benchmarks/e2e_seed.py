"""Seed the ``e2e`` scenario's database: N routers x 4 ports in ``up``, then one full compile.

Why a subprocess of its own, before the server starts: creating 40,000 instances over HTTP
would run 40,000 validation compiles and take hours; the inventory facade's
``import_instances`` writes them in bulk straight into ``up`` (validated, relations checked),
and the full compile gives the load a desired-state version to build on. Running it in its
own interpreter keeps the driver free of the engine's state (model modules, SQLAlchemy pools)
and leaves the database exactly as a production server would find it after a migration: the
server starts on it cold.

``python -m benchmarks.e2e_seed --database URL --routers N --out FILE`` writes what it did
(counts, seconds, the compile's report) as JSON to FILE. It must not start any worker thread:
the compile runs in this thread (``processing.drain``), and the process exits when it is done.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, BenchmarkError
from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api

#: the model the e2e scenario runs, and its shape
MODEL = REPO / "examples" / "router_port"
PORTS_PER_ROUTER = 4
SEED_STATE = "up"
SEED_MTU = 1500


def router_attributes(routers: int) -> list[dict[str, Any]]:
    """Unique management addresses (the identity) in 10.0.0.0/8, one name per router."""
    return [
        {"mgmt_ip": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}", "name": f"r{i:06d}"}
        for i in range(routers)
    ]


def port_attributes(router_ids: list[str]) -> list[dict[str, Any]]:
    """``PORTS_PER_ROUTER`` ports per router, ``eth0``.., all at ``SEED_MTU``."""
    return [
        {"name": f"eth{p}", "router": router_id, "mtu": SEED_MTU}
        for router_id in router_ids
        for p in range(PORTS_PER_ROUTER)
    ]


def seed(database_url: str, routers: int) -> dict[str, Any]:
    """Import the routers and their ports, run one full compile; what it took, in seconds."""
    if routers < 1:
        raise BenchmarkError(f"--routers must be at least 1, not {routers}")
    config = ServerConfig(database_url=database_url, model=str(MODEL), embedded_worker=False)
    engine = build_api(config)
    ctx = RequestContext.local()
    engine.start()
    try:
        started = time.perf_counter()
        router_ids = engine.facades.inventory.import_instances(
            ctx, "router", SEED_STATE, router_attributes(routers)
        )
        port_ids = engine.facades.inventory.import_instances(
            ctx, "port", SEED_STATE, port_attributes(router_ids)
        )
        imported = time.perf_counter()
        requested = engine.facades.compiles.request_compile(ctx, kind="full")
        engine.processing.drain()
        compiled = time.perf_counter()
        done = engine.facades.compiles.get_compile(ctx, requested.id)
        if done.status != "success":
            error = done.report.get("error", {})
            raise BenchmarkError(
                f"seed full compile {done.id} ended {done.status}: {error.get('message', error)}"
            )
        expected = routers * (2 + PORTS_PER_ROUTER)  # router, its agent config, its interfaces
        if done.report.get("resources") != expected:
            raise BenchmarkError(
                f"seed full compile produced {done.report.get('resources')} resources, expected {expected}"
            )
        return {
            "routers": len(router_ids),
            "ports": len(port_ids),
            "import_s": imported - started,
            "full_compile_s": compiled - imported,
            "desired_state_version": done.desired_state_version,
            "resources": expected,
            "compile_timings": done.report.get("timings", {}),
        }
    finally:
        engine.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.e2e_seed", description=__doc__)
    parser.add_argument("--database", required=True, help="database URL (an empty database)")
    parser.add_argument("--routers", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True, help="where the JSON summary goes")
    args = parser.parse_args(argv)
    result = seed(args.database, args.routers)
    args.out.write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
