"""``python -m benchmarks faults``: bursts of orders under scale-out and under kill -9, nothing stranded.

Why on the real command line: the faults are those of processes (two agents contending for
leases and rows; a server killed with SIGKILL between a deploy result and its lifecycle
feedback), so they are reproduced with real ``lsm server`` / ``lsm worker`` / ``lsm agent``
processes on 127.0.0.1 (``benchmarks.processes``), over the ``benchmarks/deploy_model.py``
model (each ``nothing`` order refines into one ``std::Null`` on one of ten agent names).

* ``--case burst``: ``lsm server --no-worker`` (the API), ``--workers`` ``lsm worker`` and
  ``--agents`` ``lsm agent`` processes (PostgreSQL: ``--database-url``); ``--orders`` orders at
  once; then until every instance is ``up``. Reports the burst's time, the time to all ``up``
  after it, what is left ``deploying``, and the lines of every log that name a deadlock or a
  traceback (the issue's bar: none).
* ``--case kills``: ``lsm server`` with its embedded worker and agent; orders sent for
  ``--span`` seconds while the server is killed (SIGKILL) ``--kills`` times and restarted at
  once; then until every instance (every accepted order, and any the server took before it
  died) is ``up``. Reports the time from the last restart to all ``up`` (the default repair
  interval is 600 s: a figure under it means no order waited for the repair).

* ``--case terminate`` (PostgreSQL): the ``burst`` processes; orders spread over ``--span``
  seconds while every connection to the database is cut (``pg_terminate_backend``) ``--kills``
  times. Reports what each cut closed, the answers other than 200 (a cut costs a request a 503
  with ``Retry-After`` at worst, never a 500), the time to all ``up`` after the burst, and the
  logs' deadlocks and tracebacks.

Every wait is bounded by ``--timeout``; every process started is stopped at the end. The test
suite runs the same code at a small size (tests/runtime/test_agent_faults.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from sqlalchemy import create_engine, func, make_url, select, text
from sqlmodel import col

from benchmarks import report
from benchmarks.backend import backend_name, fresh_database_url
from benchmarks.harness import BenchmarkError
from benchmarks.load import INVENTORY
from benchmarks.processes import HOST, Processes, Started, free_port, lsm_command
from lsm.store.database import Database
from lsm.store.deploy.leases import PROCESS_PREFIX
from lsm.store.deploy.tables import lsm_deploy_feedback, lsm_resource_state
from lsm.store.tables import InstanceRow, LeaseRow

MODEL = Path(__file__).resolve().parent / "deploy_model.py"
ENTITY = "nothing"
#: what a log must never say (the issue's bar for "no deadlock, no crash")
#: how often one order is sent again after a 503 before it counts as refused
RETRIES_503 = 10
PROBLEMS = re.compile(r"deadlock|Traceback", re.IGNORECASE)


@dataclass
class Cluster:
    """The processes of one run on one database, and what is needed to look at them."""

    processes: Processes
    url: str
    #: ``--lease-ttl`` of workers and agents; ``None``: their default
    lease_ttl: float | None = None
    servers: list[Started] = field(default_factory=list)
    base_url: str = ""
    env: dict[str, str] = field(default_factory=dict)

    def start_server(
        self,
        *,
        worker: bool = True,
        env: dict[str, str] | None = None,
        port: int | None = None,
        workers: int | None = None,
    ) -> Started:
        """Start ``lsm server`` (``port``: the one a killed server had; ``workers``: its
        ``--workers``, 0 for compiles and the agent in the server process) and wait until it
        serves."""
        port = port or free_port()
        self.base_url = f"http://{HOST}:{port}"
        argv = [*lsm_command(), "server", "--model", str(MODEL), "--database", self.url]
        argv += ["--host", HOST, "--port", str(port), "--no-access-log"]
        if not worker:
            argv.append("--no-worker")
        elif workers is not None:
            argv += ["--workers", str(workers)]
        name = f"server{len(self.servers)}"
        server = self.processes.start(name, argv, env={**self.env, **(env or {})})
        self.servers.append(server)
        self.processes.wait_healthy(server, self.base_url, 120.0)
        return server

    def start_worker(self, n: int) -> Started:
        argv = [*lsm_command(), "worker", "--model", str(MODEL), "--database", self.url, *self._ttl()]
        return self.processes.start(f"worker{n}", argv)

    def start_agent(self, n: int) -> Started:
        argv = [*lsm_command(), "agent", "--database", self.url, *self._ttl()]
        return self.processes.start(
            f"agent{n}", argv, env={**self.env, "LSM_STATE_DIR": str(self.processes.directory / f"state{n}")}
        )

    def _ttl(self) -> list[str]:
        return [] if self.lease_ttl is None else ["--lease-ttl", str(self.lease_ttl)]

    def check_alive(self) -> None:
        """Fail when a process died, other than the servers killed on purpose (all but the last)."""
        for started in self.processes.started:
            if started not in self.servers[:-1] and started.process.poll() is not None:
                raise BenchmarkError(
                    f"{started.name} exited with status {started.process.returncode}:\n{started.tail()}"
                )

    def wait_agents(self, count: int, deadline: float) -> None:
        """Until ``count`` agent processes hold their presence lease (they have started)."""
        db = Database(self.url)
        try:
            while True:
                self.check_alive()
                with db.read() as session:
                    query = select(func.count()).where(col(LeaseRow.name).startswith(PROCESS_PREFIX))
                    if int(session.execute(query).scalar_one()) >= count:
                        return
                if time.monotonic() > deadline:
                    raise BenchmarkError(f"{count} agent processes did not start in time")
                time.sleep(0.2)
        finally:
            db.dispose()

    def pending_feedback(self) -> int:
        """Deploy results whose lifecycle feedback has not run yet."""
        db = Database(self.url)
        try:
            with db.read() as session:
                return int(
                    session.execute(select(func.count()).select_from(lsm_deploy_feedback)).scalar_one()
                )
        finally:
            db.dispose()

    def counts(self) -> tuple[Counter[str], Counter[str]]:
        """(instance states, resource statuses), read from the database."""
        db = Database(self.url)
        try:
            with db.read() as session:
                states = Counter(
                    {
                        r[0]: r[1]
                        for r in session.execute(
                            select(col(InstanceRow.state), func.count()).group_by(col(InstanceRow.state))
                        )
                    }
                )
                statuses = Counter(
                    {
                        r[0]: r[1]
                        for r in session.connection().execute(
                            select(lsm_resource_state.c.status, func.count()).group_by(
                                lsm_resource_state.c.status
                            )
                        )
                    }
                )
            return states, statuses
        finally:
            db.dispose()

    def wait_all_up(self, deadline: float, check: Callable[[], None] | None = None) -> Counter[str]:
        """Poll until every instance is ``up`` and no resource is open; the last states seen."""
        while True:
            if check is not None:
                check()
            states, statuses = self.counts()
            if (
                states
                and set(states) == {"up"}
                and not statuses.get("deploying")
                and not statuses.get("pending")
            ):
                return states
            if time.monotonic() > deadline:
                raise BenchmarkError(
                    f"not all up in time: instances {dict(states)}, resources {dict(statuses)}"
                )
            time.sleep(0.5)

    def problems(self) -> dict[str, list[str]]:
        """Per process log, the lines that name a deadlock or a traceback."""
        out: dict[str, list[str]] = {}
        for started in self.processes.started:
            text = started.log.read_text(errors="replace") if started.log.exists() else ""
            found = [line for line in text.splitlines() if PROBLEMS.search(line)]
            if found:
                out[started.name] = found[:20]
        return out


async def send_orders(
    base_url: str, names: list[str], *, concurrency: int, span: float = 0.0
) -> dict[str, Any]:
    """POST one order per name (``concurrency`` in flight; spread over ``span`` seconds when
    given); an order is accepted on a 200. A 503 is the server saying "the database, try
    again": the order is sent again after its ``Retry-After`` with the same ``Idempotency-Key``
    (so it is taken once), as a client should; each 503 is counted. Other failures (a server
    being killed) are counted and the order is not sent again."""
    gate = asyncio.Semaphore(concurrency)
    accepted: list[str] = []
    errors: Counter[str] = Counter()
    began = time.monotonic()

    async def one(client: httpx.AsyncClient, i: int, name: str) -> None:
        if span:
            await asyncio.sleep(max(0.0, began + span * i / len(names) - time.monotonic()))
        async with gate:
            for _ in range(RETRIES_503):
                try:
                    r = await client.post(
                        f"{INVENTORY}/{ENTITY}",
                        json={"attributes": {"name": name}},
                        headers={"Idempotency-Key": f"order-{name}"},
                    )
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] += 1
                    return
                if r.status_code != 503:
                    break
                errors["HTTP 503 (sent again)"] += 1
                await asyncio.sleep(float(r.headers.get("Retry-After", "1")))
            if r.status_code == 200:
                accepted.append(str(r.json()["id"]))
            else:
                errors[f"HTTP {r.status_code}"] += 1

    limits = httpx.Limits(
        max_connections=concurrency, max_keepalive_connections=concurrency, keepalive_expiry=2.0
    )  # under the server's keep-alive time: a request never meets a connection it just closed
    async with httpx.AsyncClient(base_url=base_url, timeout=60.0, limits=limits) as client:
        await asyncio.gather(*(one(client, i, n) for i, n in enumerate(names)))
    return {"accepted": accepted, "errors": dict(errors), "seconds": round(time.monotonic() - began, 3)}


@dataclass(frozen=True)
class FaultOptions:
    scenario: str = "burst"
    orders: int = 2_500
    agents: int = 2
    workers: int = 2
    kills: int = 4
    span: float = 30.0
    concurrency: int = 50
    timeout: float = 600.0
    database_url: str | None = None
    workdir: Path | None = None
    #: ``--lease-ttl`` of workers and agents (``None``: their default); short leases make
    #: renewals, expiries and take-overs race under the burst
    lease_ttl: float | None = None


def start_scaled_out(cluster: Cluster, options: FaultOptions) -> None:
    """The API (``lsm server --no-worker``), ``--workers`` workers and ``--agents`` agents, once
    every agent holds its presence lease."""
    cluster.start_server(worker=False)
    for n in range(options.workers):
        cluster.start_worker(n)
    for n in range(options.agents):
        cluster.start_agent(n)
    cluster.wait_agents(options.agents, time.monotonic() + 120.0)


def run_burst(cluster: Cluster, options: FaultOptions) -> dict[str, Any]:
    """The ``burst`` scenario on a started database (module docstring)."""
    start_scaled_out(cluster, options)
    names = [f"b{i}" for i in range(options.orders)]
    sent = asyncio.run(send_orders(cluster.base_url, names, concurrency=options.concurrency))
    burst_end = time.monotonic()
    states = cluster.wait_all_up(time.monotonic() + options.timeout, cluster.check_alive)
    return {
        "orders": options.orders,
        "accepted": len(sent["accepted"]),
        "order_errors": sent["errors"],
        "burst_s": sent["seconds"],
        "all_up_after_burst_s": round(time.monotonic() - burst_end, 3),
        "instances": dict(states),
        "resources": dict(cluster.counts()[1]),
        "problems": cluster.problems(),
    }


def run_kills(cluster: Cluster, options: FaultOptions) -> dict[str, Any]:
    """The ``kills`` scenario on a started database (module docstring)."""
    server = cluster.start_server()
    names = [f"k{i}" for i in range(options.orders)]
    kills: list[float] = []
    restarts: list[float] = []
    stranded: list[dict[str, int]] = []  # what each kill left for the restart to finish

    async def burst_and_kill() -> dict[str, Any]:
        orders = asyncio.create_task(
            send_orders(cluster.base_url, names, concurrency=options.concurrency, span=options.span)
        )
        # kill k at span * k / (kills + 1) from the start (or as soon as the restart before it
        # serves): the kills fall inside the span whatever a restart takes
        began = time.monotonic()
        for k in range(1, options.kills + 1):
            await asyncio.sleep(max(0.0, began + options.span * k / (options.kills + 1) - time.monotonic()))
            nonlocal server
            server.process.kill()
            server.process.wait(30)
            kills.append(round(time.monotonic() - began, 3))
            left = await asyncio.to_thread(lambda: (cluster.pending_feedback(), cluster.counts()[1]))
            stranded.append({"feedback_pending": left[0], "deploying": left[1].get("deploying", 0)})
            server = await asyncio.to_thread(restart, server)
        return await orders

    def restart(previous: Started) -> Started:
        again = cluster.start_server(port=int(cluster.base_url.rsplit(":", 1)[1]))
        restarts.append(time.monotonic())
        return again

    sent = asyncio.run(burst_and_kill())
    last_restart = restarts[-1] if restarts else time.monotonic()
    states = cluster.wait_all_up(last_restart + options.timeout, cluster.check_alive)
    return {
        "orders": options.orders,
        "kills": options.kills,
        "span_s": options.span,
        "killed_at_s": kills,
        "left_by_each_kill": stranded,
        "accepted": len(sent["accepted"]),
        "order_errors": sent["errors"],
        "all_up_after_last_restart_s": round(time.monotonic() - last_restart, 3),
        "instances": dict(states),
        "resources": dict(cluster.counts()[1]),
        "problems": cluster.problems(),
    }


def terminate_backends(url: str) -> int:
    """``pg_terminate_backend`` of every connection to the database of ``url`` (but this one):
    how many were cut. The two-argument form waits until each backend is gone, so a cut is
    complete when it is counted (as ``tests/runtime/test_connection_loss.py`` does)."""
    database = make_url(url).database
    admin = create_engine(make_url(url).set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            cut = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid, 30000)) FROM pg_stat_activity "
                    "WHERE datname = :db AND pid <> pg_backend_pid()"
                ),
                {"db": database},
            ).scalar_one()
    finally:
        admin.dispose()
    return int(cut)


def run_terminate(cluster: Cluster, options: FaultOptions) -> dict[str, Any]:
    """The ``terminate`` scenario (PostgreSQL): the ``burst`` processes, orders spread over
    ``--span`` seconds, and every backend of the database cut ``--kills`` times meanwhile."""
    if not cluster.url.startswith("postgresql"):
        raise BenchmarkError("--case terminate needs --database-url postgresql://...")
    start_scaled_out(cluster, options)
    names = [f"t{i}" for i in range(options.orders)]
    cuts: list[dict[str, float]] = []

    async def burst_and_cut() -> dict[str, Any]:
        orders = asyncio.create_task(
            send_orders(cluster.base_url, names, concurrency=options.concurrency, span=options.span)
        )
        began = time.monotonic()
        for k in range(1, options.kills + 1):
            await asyncio.sleep(max(0.0, began + options.span * k / (options.kills + 1) - time.monotonic()))
            cut = await asyncio.to_thread(terminate_backends, cluster.url)
            cuts.append({"at_s": round(time.monotonic() - began, 3), "connections": cut})
        return await orders

    sent = asyncio.run(burst_and_cut())
    burst_end = time.monotonic()
    states = cluster.wait_all_up(burst_end + options.timeout, cluster.check_alive)
    return {
        "orders": options.orders,
        "cuts": cuts,
        "accepted": len(sent["accepted"]),
        "order_errors": sent["errors"],
        "burst_s": sent["seconds"],
        "all_up_after_burst_s": round(time.monotonic() - burst_end, 3),
        "instances": dict(states),
        "resources": dict(cluster.counts()[1]),
        "problems": cluster.problems(),
    }


def run_faults(options: FaultOptions) -> dict[str, Any]:
    out: dict[str, Any] = {"scenario": options.scenario, "backend": backend_name(options.database_url)}
    if options.workdir is not None:
        options.workdir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="lsm-bench-faults-", dir=options.workdir) as tmp,
        fresh_database_url(options.database_url, options.workdir, "faults") as url,
        Processes(Path(tmp), cwd=Path(tmp)) as processes,
    ):
        cluster = Cluster(processes, url, lease_ttl=options.lease_ttl)
        run = {"burst": run_burst, "kills": run_kills, "terminate": run_terminate}[options.scenario]
        try:
            out.update(run(cluster, options))
        finally:
            if out.get("problems") or "instances" not in out:  # keep the logs to read why
                kept = Path(options.workdir or ".") / f"faults-logs-{int(time.time())}"
                shutil.copytree(tmp, kept, ignore=shutil.ignore_patterns("*.db*", "state*"))
                out["logs_kept_in"] = str(kept)
    return out


def add_faults_parser(commands: Any) -> None:
    faults = commands.add_parser(
        "faults",
        help="bursts of orders with two agents and workers, or with the server killed: nothing stranded",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    faults.add_argument(
        "--case", choices=("burst", "kills", "terminate"), default="burst", help="which fault case"
    )
    faults.add_argument("--orders", type=int, default=2_500, help="orders in the burst (default 2500)")
    faults.add_argument("--agents", type=int, default=2, help="lsm agent processes (burst)")
    faults.add_argument("--workers", type=int, default=2, help="lsm worker processes (burst)")
    faults.add_argument(
        "--kills", type=int, default=4, help="kill -9 of the server (kills), connection cuts (terminate)"
    )
    faults.add_argument(
        "--span", type=float, default=30.0, help="seconds the orders and kills take (kills, terminate)"
    )
    faults.add_argument("--concurrency", type=int, default=50, help="requests in flight")
    faults.add_argument("--timeout", type=float, default=600.0, help="bound of the wait for all up (s)")
    faults.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    faults.add_argument("--workdir", type=Path, default=None, help="where SQLite files and logs go")
    faults.add_argument("--json", type=Path, default=None, help="result file")
    faults.add_argument("--lease-ttl", type=float, default=None, help="lease of workers and agents (s)")


def run_faults_command(args: argparse.Namespace, argv: list[str]) -> int:
    console = Console(width=200)
    started_at = datetime.now(UTC)
    options = FaultOptions(
        scenario=args.case,
        orders=args.orders,
        agents=args.agents,
        workers=args.workers,
        kills=args.kills,
        span=args.span,
        concurrency=args.concurrency,
        timeout=args.timeout,
        database_url=args.database_url,
        workdir=args.workdir,
        lease_ttl=args.lease_ttl,
    )
    status = 0
    try:
        result = run_faults(options)
    except Exception as exc:  # reported in the document
        result = {"error": f"{type(exc).__name__}: {exc}"}
        status = 1
    if result.get("problems"):
        status = 1
    console.print_json(json.dumps(result, default=str))
    path = args.json or report.default_path(
        f"faults-{args.case}", backend_name(args.database_url), started_at
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {"scenario": "faults", "argv": argv, "started_at": started_at.isoformat(), "result": result},
            indent=2,
            default=str,
        )
    )
    console.print(f"results written to {path}")
    return status
