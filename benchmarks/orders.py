"""``python -m benchmarks orders``: order to ``up`` over real HTTP, one at a time and 1,000 at once.

Why end to end: an operator's order goes through the API, the validation compile, the promotion,
the exporting compile, the deploy agent (plan, claim, handler, result write) and the lifecycle
feedback before it is ``up``; each is measured on its own elsewhere, this measures them
together, on the real command line:

1. a fresh database (``benchmarks.backend.fresh_database_url``: a SQLite file, or a new
   PostgreSQL database with ``--database-url``);
2. ``lsm server --model benchmarks/deploy_model.py`` with its embedded worker and agent, on
   127.0.0.1 (``benchmarks.processes``); each ``nothing`` instance refines into one ``std::Null``;
3. one ``GET /api/v1/events`` stream, read all along: the time an ``instance_state`` event with
   target ``up`` arrives is when that order is ``up`` (a listing poll every ``--poll`` seconds
   is the safety net for an event the stream would miss; it never makes a latency smaller);
4. (a) ``--sequential`` orders one after another: latency from the POST to ``up``, p50/p95;
   (b) ``--concurrent`` orders at once (``--concurrency`` in flight): orders/s from the first
   POST to the last ``up``, and how many reached ``up``;
5. stop the server and drop the database, whatever happened.

Every wait is bounded by ``--timeout`` seconds per phase; nothing leaves loopback.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from benchmarks import load, order_groups, report
from benchmarks.backend import backend_name, fresh_database_url
from benchmarks.harness import BenchmarkError
from benchmarks.processes import HOST, Processes, free_port, lsm_command
from benchmarks.stats import percentile

MODEL = Path(__file__).resolve().parent / "deploy_model.py"
ENTITY = "nothing"
HEALTH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class OrdersOptions:
    sequential: int = 50
    concurrent: int = 1_000
    concurrency: int | None = None  # None: as many as concurrent
    timeout: float = 300.0
    poll_s: float = 2.0
    database_url: str | None = None
    workdir: Path | None = None
    groups: int = 0  # orders of 1 router, 4 ports, 1 tunnel, one at a time (benchmarks.order_groups)
    big: int = 0  # items of one big order (0: none)


def add_orders_parser(commands: Any) -> None:
    orders = commands.add_parser(
        "orders",
        help="order to `up` over HTTP: sequential latency (p50/p95) and concurrent orders/s",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    orders.add_argument("--sequential", type=int, default=50, help="orders one at a time (default 50)")
    orders.add_argument("--concurrent", type=int, default=1_000, help="orders at once (default 1000)")
    orders.add_argument("--concurrency", type=int, default=None, help="requests in flight (default: all)")
    orders.add_argument("--timeout", type=float, default=300.0, help="bound of each phase (s)")
    orders.add_argument("--poll", type=float, default=2.0, help="seconds between safety-net listings")
    orders.add_argument("--database-url", default=None, help="PostgreSQL server (default: a SQLite file)")
    orders.add_argument("--workdir", type=Path, default=None, help="where SQLite files and logs go")
    orders.add_argument("--json", type=Path, default=None, help="result file")
    orders.add_argument(
        "--groups",
        type=int,
        default=0,
        help="orders of 1 router, 4 ports, 1 tunnel, one at a time (default 0)",
    )
    orders.add_argument(
        "--big", type=int, default=0, help="items of one big order of routers and ports (default 0)"
    )


class UpWatch:
    """When each instance was first seen ``up`` (``time.perf_counter``), from the event stream."""

    def __init__(self) -> None:
        self.up_at: dict[str, float] = {}
        self.states: dict[str, str] = {}
        self.changed = asyncio.Event()
        self.events = 0
        self.polled = 0
        self.connected = asyncio.Event()

    def saw(self, instance_id: str, state: str, at: float) -> None:
        self.states[instance_id] = state
        if state == "up" and instance_id not in self.up_at:
            self.up_at[instance_id] = at
            self.changed.set()

    async def follow(self, client: httpx.AsyncClient) -> None:
        """Read ``/api/v1/events`` until cancelled; reconnect after ``Last-Event-ID`` if it drops."""
        last: str | None = None
        while True:
            headers = {"Last-Event-ID": last} if last else {}
            try:
                async with client.stream("GET", "/api/v1/events", headers=headers, timeout=None) as r:
                    r.raise_for_status()
                    self.connected.set()
                    async for event_id, kind, data in _sse(r.aiter_lines()):
                        last = event_id or last
                        if kind == "instance_state":
                            self.events += 1
                            payload = json.loads(data)
                            self.saw(payload["instance_id"], payload["target"], time.perf_counter())
            except (httpx.HTTPError, json.JSONDecodeError):
                await asyncio.sleep(0.2)

    async def until(self, ids: set[str], deadline: float, check: Any) -> None:
        """Until every id is ``up``; ``check`` (a coroutine function) runs every wake or poll."""
        while not ids <= self.up_at.keys():
            if time.monotonic() > deadline:
                missing = ids - self.up_at.keys()
                states: dict[str, int] = {}
                for i in missing:
                    states[self.states.get(i, "?")] = states.get(self.states.get(i, "?"), 0) + 1
                raise BenchmarkError(f"{len(missing)} of {len(ids)} orders not up in time: {states}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                wait_s = min(1.0, max(0.0, deadline - time.monotonic()))
                await asyncio.wait_for(self.changed.wait(), timeout=wait_s)
            await check()


async def _sse(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str | None, str, str]]:
    """``(id, event, data)`` of each server-sent event; comments are skipped."""
    event_id: str | None = None
    kind = "message"
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield event_id, kind, "\n".join(data)
            event_id, kind, data = None, "message", []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event_id = value
            elif field == "event":
                kind = value
            elif field == "data":
                data.append(value)


#: tries of one order in all, and the pause before the next (doubled each time, Retry-After wins)
ORDER_TRIES = 5
FIRST_PAUSE_S = 0.2


async def _order(client: httpx.AsyncClient, name: str, tries: list[int] | None = None) -> str:
    """Create one instance, retrying what a client of a busy server must retry: a transport
    error (a read cut off) or a 503. The ``Idempotency-Key`` makes a retried create answer the
    first create's instance, so a retry never orders twice. ``tries`` collects how many it took."""
    pause = FIRST_PAUSE_S
    for attempt in range(1, ORDER_TRIES + 1):
        try:
            response = await client.post(
                f"/lsm/v1/service_inventory/{ENTITY}",
                json={"attributes": {"name": name}},
                headers={"Idempotency-Key": f"bench-{name}"},
            )
        except httpx.TransportError:
            if attempt == ORDER_TRIES:
                raise
        else:
            if response.status_code == 200:
                if tries is not None:
                    tries.append(attempt)
                return str(response.json()["id"])
            if response.status_code != 503 or attempt == ORDER_TRIES:
                raise BenchmarkError(f"order {name}: HTTP {response.status_code} {response.text[:300]}")
            pause = max(pause, float(response.headers.get("Retry-After", pause)))
        await asyncio.sleep(pause)
        pause *= 2
    raise AssertionError("unreachable: the last try returns or raises")


async def _drive(base_url: str, options: OrdersOptions, processes: Processes) -> dict[str, Any]:
    limits = load.client_limits(options.concurrency or max(1, options.concurrent))
    watch = UpWatch()
    async with (
        httpx.AsyncClient(base_url=base_url, limits=limits, timeout=120.0) as client,
        httpx.AsyncClient(base_url=base_url, timeout=120.0) as stream_client,
    ):
        follower = asyncio.create_task(watch.follow(stream_client))
        try:
            await asyncio.wait_for(watch.connected.wait(), timeout=30.0)
            last_poll = [time.monotonic()]

            async def check() -> None:
                processes.check_alive()
                if time.monotonic() - last_poll[0] < options.poll_s:
                    return
                last_poll[0] = time.monotonic()
                now = time.perf_counter()
                for item in await load.list_instances(client, ENTITY, states=["up"]):
                    if item["id"] not in watch.up_at:
                        watch.polled += 1
                        watch.saw(str(item["id"]), "up", now)

            if options.groups or options.big:
                await order_groups.use_relation_closure(client)
            sequential = await _sequential(client, watch, options, check)
            concurrent = await _concurrent(client, watch, options, check)
            grouped = (
                await order_groups.groups(client, watch, options.groups, options.timeout, check)
                if options.groups
                else None
            )
            big = (
                await order_groups.big(client, watch, options.big, options.timeout, check)
                if options.big
                else None
            )
            return {
                "sequential": sequential,
                "concurrent": concurrent,
                "groups": grouped,
                "big": big,
                "events_read": watch.events,
                "up_seen_by_poll": watch.polled,
            }
        finally:
            follower.cancel()
            with contextlib.suppress(BaseException):
                await follower


async def _sequential(
    client: httpx.AsyncClient, watch: UpWatch, options: OrdersOptions, check: Any
) -> dict[str, Any] | None:
    if options.sequential < 1:
        return None
    deadline = time.monotonic() + options.timeout
    latencies: list[float] = []
    for i in range(options.sequential):
        sent = time.perf_counter()
        instance_id = await _order(client, f"seq{i}")
        await watch.until({instance_id}, deadline, check)
        latencies.append((watch.up_at[instance_id] - sent) * 1000)
    return {
        "orders": options.sequential,
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "max_ms": round(max(latencies), 1),
        "latencies_ms": [round(v, 1) for v in latencies],
    }


async def _concurrent(
    client: httpx.AsyncClient, watch: UpWatch, options: OrdersOptions, check: Any
) -> dict[str, Any] | None:
    if options.concurrent < 1:
        return None
    deadline = time.monotonic() + options.timeout
    gate = asyncio.Semaphore(options.concurrency or options.concurrent)

    errors: dict[str, int] = {}
    tries: list[int] = []

    async def one(i: int) -> str | None:
        async with gate:
            try:
                return await _order(client, f"con{i}", tries)
            except (httpx.HTTPError, BenchmarkError) as exc:  # counted, not fatal: how many failed
                key = type(exc).__name__ if isinstance(exc, httpx.HTTPError) else str(exc)[:120]
                errors[key] = errors.get(key, 0) + 1
                return None

    first = time.perf_counter()
    answers = await asyncio.gather(*(one(i) for i in range(options.concurrent)))
    ids = {i for i in answers if i is not None}
    accepted_s = time.perf_counter() - first
    error: str | None = None
    try:
        await watch.until(ids, deadline, check)
    except BenchmarkError as exc:
        error = str(exc)
    ups = [watch.up_at[i] for i in ids if i in watch.up_at]
    last = max(ups) if ups else time.perf_counter()
    return {
        "orders": options.concurrent,
        "accepted": len(ids),
        "order_errors": errors,
        "retried": sum(1 for t in tries if t > 1),
        "all_accepted_s": round(accepted_s, 3),
        "up": len(ups),
        "all_up": len(ups) == options.concurrent,
        "duration_s": round(last - first, 3),
        "orders_per_s": round(len(ups) / (last - first), 1) if ups else 0.0,
        "p50_order_to_up_s": round(percentile([u - first for u in ups], 50), 3) if ups else None,
        "error": error,
    }


def run_orders(options: OrdersOptions) -> dict[str, Any]:
    """The scenario once (module docstring); raises ``BenchmarkError`` when it can not be measured."""
    out: dict[str, Any] = {
        "load_average_at_start": os.getloadavg()[0],
        "backend": backend_name(options.database_url),
    }
    if options.workdir is not None:
        options.workdir.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="lsm-bench-orders-run-", dir=options.workdir) as tmp,
        fresh_database_url(options.database_url, options.workdir, "orders") as url,
    ):
        run_dir = Path(tmp)
        with Processes(run_dir, cwd=run_dir) as processes:
            port = free_port()
            base_url = f"http://{HOST}:{port}"
            argv = [*lsm_command(), "server", "--model", str(MODEL), "--database", url]
            server = processes.start("server", [*argv, "--host", HOST, "--port", str(port)])
            out["server_start_s"] = processes.wait_healthy(server, base_url, HEALTH_TIMEOUT_S)
            try:
                out.update(asyncio.run(_drive(base_url, options, processes)))
            except BaseException as exc:
                out["logs"] = {s.name: s.tail(40) for s in processes.started}
                exc.logs = out["logs"]  # type: ignore[attr-defined]  # the processes' logs ride on the exception to the report
                raise
            finally:
                out["exit_codes"] = processes.stop_all()
                out["log_warnings"] = {s.name: s.warnings() for s in processes.started}
    out["load_average_at_end"] = os.getloadavg()[0]
    return out


def run_orders_command(args: argparse.Namespace, argv: list[str]) -> int:
    console = Console(width=200)
    started_at = datetime.now(UTC)
    options = OrdersOptions(
        sequential=args.sequential,
        concurrent=args.concurrent,
        concurrency=args.concurrency,
        timeout=args.timeout,
        poll_s=args.poll,
        database_url=args.database_url,
        workdir=args.workdir,
        groups=args.groups,
        big=args.big,
    )
    status = 0
    try:
        result = run_orders(options)
    except Exception as exc:  # reported in the document, with the server's log tail
        result = {"error": f"{type(exc).__name__}: {exc}", "logs": getattr(exc, "logs", None)}
        status = 1
    if result.get("concurrent") and not result["concurrent"]["all_up"]:
        status = 1
    doc = {"scenario": "orders", "argv": argv, "started_at": started_at.isoformat(), "result": result}
    table = Table(title=f"orders on {backend_name(args.database_url)}")
    table.add_column("measurement")
    table.add_column("result", justify="right")
    if "error" in result:
        table.add_row("error", result["error"])
    if seq := result.get("sequential"):
        table.add_row(
            f"{seq['orders']} sequential orders, POST to up",
            f"p50 {seq['p50_ms']} ms, p95 {seq['p95_ms']} ms, max {seq['max_ms']} ms",
        )
    if con := result.get("concurrent"):
        table.add_row(
            f"{con['orders']} concurrent orders until all up",
            f"{con['orders_per_s']} orders/s, {con['up']}/{con['accepted']} up in {con['duration_s']} s",
        )
        failed = sum(con["order_errors"].values())
        table.add_row(
            "every order answered",
            f"{con['accepted']} accepted ({con['retried']} after a retry), {failed} failed"
            + (f": {con['order_errors']}" if failed else ""),
        )
    if grouped := result.get("groups"):
        table.add_row(
            f"{grouped['orders']} orders of 1 router, 4 ports, 1 tunnel, POST to done",
            f"p50 {grouped['p50_ms']} ms, p95 {grouped['p95_ms']} ms, max {grouped['max_ms']} ms",
        )
    if big := result.get("big"):
        table.add_row(
            f"one order of {big['items']} items",
            f"accepted in {big['accepted_s']} s, done in {big['done_s']} s",
        )
    console.print(table)
    path = args.json or report.default_path("orders", backend_name(args.database_url), started_at)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, default=str))
    console.print(f"results written to {path}")
    return status
