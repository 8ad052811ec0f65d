"""``python -m benchmarks.export``: `lsm export --partial` of one network on a large base, as a process.

Why a whole process: the seed measured ``inmanta export --partial`` of one network on a
100,000-network base at 90.8 s, end to end; issue 28 asks for under a second. What costs here is
the command's start (its imports), loading the partial model, one ``PUT /api/v1/desired_state``
and the store's partial export, which must cost the one set and never the base.

The run starts ``lsm server --no-agent`` (the deploy of a 500,000-resource base is not what is
measured) on a fresh database, stores the base straight into the store (``--networks`` sets
``network-<i>`` of ``--hosts`` hosts each, plus the shared agent config: what
``examples/resource_sets/full.py`` declares for 1,000), then runs ``lsm export MODEL --partial``
``--repeat`` times, alternating ``examples/resource_sets/partial.py`` (network 0 with one host)
with the same network with five hosts, so that every run replaces network-0. It reports the
wall time and CPU time of each process (median, p95, max; the load average says how much a
busy machine stretched the wall time) and, for comparison, the same PUT sent from this
process (the server's share) and ``python -c pass`` (the interpreter's start). Nothing is
asserted here; tests/test_export_bench.py only checks that it runs and stores what it should.

    python -m benchmarks.export --networks 100000
    python -m benchmarks.export --networks 100000 --database-url postgresql://postgres@127.0.0.1/test
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.backend import backend_name, fresh_database_url
from benchmarks.harness import BenchmarkError
from benchmarks.processes import HOST, Processes, free_port, lsm_command
from benchmarks.report import emit
from benchmarks.stats import summarize
from lsm.client import Client
from lsm.desired_state import DesiredStateStore, ExportRequest, ResourceRecord
from lsm.model import declared_model
from lsm.store.database import Database

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "resource_sets"
AGENT_CONFIG = ResourceRecord(
    "std::AgentConfig[internal,agentname=host_agent]",
    {"agent": "internal", "purged": False, "autostart": True, "agentname": "host_agent"},
)


def host(network: int, number: int) -> ResourceRecord:
    """The record ``examples/resource_sets/full.py`` declares for host ``number`` of ``network``."""
    name = f"{network}-{number}"
    return ResourceRecord(
        f"example::Host[host_agent,name={name}]",
        {"agent": "host_agent", "purged": False, "network": network, "host": number, "name": name},
    )


def base_export(networks: int, hosts: int) -> ExportRequest:
    sets = {f"network-{i}": [host(i, j) for j in range(hosts)] for i in range(networks)}
    return ExportRequest("full", sets=sets, shared=[AGENT_CONFIG])


def five_hosts_model(directory: Path) -> Path:
    """``partial.py`` with network 0 back at five hosts (so that each run replaces the set)."""
    path = directory / "partial_five.py"
    text = (EXAMPLE / "partial.py").read_text()
    path.write_text(text.replace("network(0, range(1))", "network(0, range(5))"))
    return path


def _default_env_id(url: str) -> str:
    with Client(url) as client:
        found = [e for e in client.environments() if e.get("name") == "default"]
    if not found:
        raise BenchmarkError("the server has no default environment")
    return str(found[0]["id"])


def _run_export(url: str, model: Path) -> tuple[float, float]:
    """One ``lsm export --partial`` process: its wall time and its CPU time (user + system: what
    it costs on an idle machine; a loaded one stretches the wall time, not this)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        [*lsm_command(), "export", str(model), "--partial", "--url", url],
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchmarkError(f"lsm export failed ({done.returncode}): {done.stdout}{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, cpu


def _ms(samples: list[float]) -> dict[str, float]:
    return {k: round(v * 1000.0, 1) for k, v in summarize(samples).items()}


def run(
    database_url: str | None, networks: int, hosts: int, repeat: int, workdir: Path | None
) -> dict[str, Any]:
    with (
        fresh_database_url(database_url, workdir, "export") as url,
        tempfile.TemporaryDirectory(prefix="lsm-bench-export-", dir=workdir) as tmp,
    ):
        directory = Path(tmp)
        port = free_port()
        base = f"http://{HOST}:{port}"
        with Processes(directory, cwd=directory) as processes:
            server = processes.start(
                "server",
                [
                    *lsm_command(),
                    "server",
                    "--database",
                    url,
                    "--model",
                    str(REPO / "examples" / "networks"),
                    "--port",
                    str(port),
                    "--no-agent",
                ],
            )
            processes.wait_healthy(server, base, timeout=120)
            env_id = _default_env_id(base)
            db = Database(url)
            try:
                began = time.perf_counter()
                DesiredStateStore(db).export(env_id, base_export(networks, hosts))
                seeded_s = time.perf_counter() - began
            finally:
                db.dispose()
            models = [EXAMPLE / "partial.py", five_hosts_model(directory)]
            runs = [_run_export(base, models[i % 2]) for i in range(repeat)]
            # the server's share: the same PUT from a warm process
            declared = [declared_model(str(m)) for m in models]
            bodies = [
                (
                    {n: [_wire(r) for r in rs] for n, rs in d.sets.items()},
                    [_wire(r) for r in d.shared],
                )
                for d in declared
            ]
            put = []
            with Client(base) as client:
                for i in range(repeat):
                    sets, shared = bodies[i % 2]
                    began = time.perf_counter()
                    client.export_desired_state(sets, shared, partial=True)
                    put.append(time.perf_counter() - began)
                latest = client.desired_state(client.desired_states(limit=1)[0]["version"])
            processes.check_alive()
        interpreter = []
        for _ in range(repeat):
            began = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            interpreter.append(time.perf_counter() - began)
    return {
        "benchmark": "lsm_export_partial",
        "backend": backend_name(database_url),
        "command": sys.argv,
        "networks": networks,
        "hosts": hosts,
        "base_resources": networks * hosts + 1,
        "repeat": repeat,
        "seed_s": round(seeded_s, 2),
        "lsm_export_partial_process_ms": _ms([wall for wall, _ in runs]),
        "lsm_export_partial_process_cpu_ms": _ms([cpu for _, cpu in runs]),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "put_from_a_warm_client_ms": _ms(put),
        "python_start_ms": _ms(interpreter),
        "last_version": {
            "version": latest["version"],
            "sets": len(latest["sets"]),
            "network_0": latest["sets"].get("network-0"),
        },
    }


def _wire(record: Any) -> dict[str, Any]:
    return {"id": record.id, "attributes": record.attributes, "requires": list(record.requires)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.export", description=__doc__)
    parser.add_argument("--networks", type=int, default=100_000, help="networks (resource sets) in the base")
    parser.add_argument("--hosts", type=int, default=5, help="hosts per network in the base")
    parser.add_argument("--repeat", type=int, default=10, help="timed `lsm export --partial` runs")
    parser.add_argument(
        "--database-url", default=None, help="PostgreSQL URL (a fresh database); SQLite file when absent"
    )
    parser.add_argument("--workdir", type=Path, default=None, help="where the SQLite file and logs go")
    parser.add_argument("--json", type=Path, default=None, help="also write the result here")
    args = parser.parse_args(argv)
    doc = run(args.database_url, args.networks, args.hosts, args.repeat, args.workdir)
    emit(doc, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
