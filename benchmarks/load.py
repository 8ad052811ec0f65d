"""The load of the ``e2e`` scenario: M concurrent ``PATCH`` requests over real HTTP.

Why asyncio with a semaphore: the point is to measure how the server takes a burst of
operator updates, so the client must be able to keep ``concurrency`` requests in flight without
a thread each, and must not itself be the bottleneck on a 2-core machine (the burst goes
through ``benchmarks.rawhttp``; listing pages goes through httpx). Every request is
bounded by the run's deadline; a request that times out or fails to connect is recorded as an
error (``status`` None, the exception's type in ``error``), never retried: a retry would hide
exactly what the scenario is there to show.

It reads the ports to update through the list route (paging by id, so that pages are stable
while nothing is inserted), and it must not touch anything but the ports it chose.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from benchmarks import rawhttp
from benchmarks.harness import BenchmarkError

INVENTORY = "/lsm/v1/service_inventory"
#: the list routes' largest page, and how many pages any listing may take
PAGE = 10_000
MAX_PAGES = 1_000
#: the MTU values an update picks from (the model accepts 68..9216; the seed uses 1500)
NEW_MTU = range(1501, 9217)


@dataclass(frozen=True)
class Target:
    """One port to update: where it stands now and what it will become."""

    id: str
    version: int
    router: str
    name: str
    new_mtu: int


@dataclass
class PatchResult:
    """One PATCH as the client saw it: wall clock times (comparable with the server's) and the
    latency on the monotonic clock."""

    id: str
    new_mtu: int
    sent_at: float  # time.time()
    answered_at: float  # time.time()
    latency_s: float  # perf_counter difference
    status: int | None
    error: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


async def list_instances(
    client: httpx.AsyncClient, entity: str, *, states: list[str] | None = None, timeout: float = 120.0
) -> list[dict[str, Any]]:
    """Every live instance of ``entity`` (in ``states`` when given), page by page, sorted by id."""
    out: list[dict[str, Any]] = []
    for page in range(MAX_PAGES):
        params: list[tuple[str, str | int | float | bool | None]] = [
            ("limit", PAGE),
            ("offset", page * PAGE),
            ("sort", "id"),
        ]
        params += [("state", s) for s in states or []]
        response = await client.get(f"{INVENTORY}/{entity}", params=params, timeout=timeout)
        response.raise_for_status()
        batch: list[dict[str, Any]] = response.json()
        out.extend(batch)
        if len(batch) < PAGE:
            return out
    raise BenchmarkError(f"listing {entity} took more than {MAX_PAGES} pages")


def choose_targets(ports: list[dict[str, Any]], count: int, rng: random.Random) -> list[Target]:
    """``count`` distinct random ports, each with a new MTU different from its current one."""
    if count > len(ports):
        raise BenchmarkError(f"--updates {count} is more than the {len(ports)} ports seeded")
    targets = []
    for port in rng.sample(ports, count):
        attributes = port["active_attributes"]
        new_mtu = rng.choice(NEW_MTU)
        while new_mtu == attributes["mtu"]:
            new_mtu = rng.choice(NEW_MTU)
        targets.append(Target(port["id"], port["version"], attributes["router"], attributes["name"], new_mtu))
    return targets


async def patch_all(
    base_url: str, targets: list[Target], *, concurrency: int, deadline: float
) -> list[PatchResult]:
    """PATCH every target's MTU, at most ``concurrency`` at once, none past ``deadline``
    (``time.monotonic``); one result per target, in the targets' order.

    The requests go through ``benchmarks.rawhttp`` (a connection each), not httpx: httpx's pool
    costs the client O(connections) per request, and at 1,000 in flight the client, not the
    server, was the bottleneck.
    """
    host, port = _host_port(base_url)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(target: Target) -> PatchResult:
        async with semaphore:
            body = {"current_version": target.version, "attributes": {"mtu": target.new_mtu}}
            sent_at, started = time.time(), time.perf_counter()
            status: int | None = None
            error: str | None = None
            try:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("the run's deadline passed before this request was sent")
                answer = await asyncio.wait_for(
                    rawhttp.request(host, port, "PATCH", f"{INVENTORY}/port/{target.id}", body), remaining
                )
                status = answer.status
                if not 200 <= status < 300:
                    error = answer.body[:500].decode(errors="replace")
            except (rawhttp.HttpError, TimeoutError) as exc:
                error = f"{type(exc).__name__}: {exc}"
            return PatchResult(
                target.id,
                target.new_mtu,
                sent_at,
                time.time(),
                time.perf_counter() - started,
                status,
                error,
            )

    return list(await asyncio.gather(*(one(t) for t in targets)))


def errors_by_kind(results: list[PatchResult]) -> dict[str, int]:
    """Failed requests by HTTP status, or by exception type when there was no answer."""
    errors: dict[str, int] = {}
    for r in results:
        if not r.accepted:
            key = str(r.status) if r.status is not None else (r.error or "error").split(":")[0]
            errors[key] = errors.get(key, 0) + 1
    return errors


#: the reader beside the burst reads one instance this often (seconds)
READ_EVERY_S = 0.02


async def read_during(base_url: str, path: str, burst: asyncio.Task[Any]) -> list[float]:
    """GET ``path`` every ``READ_EVERY_S`` until ``burst`` is done: each read's latency (s).

    Why: an operator's console and scripts keep reading while a burst of changes goes in; the
    burst's own PATCH latency says nothing about whether they still get answers. A read that
    fails is a failed run, not a slow read.
    """
    host, port = _host_port(base_url)
    latencies: list[float] = []
    while not burst.done():
        started = time.perf_counter()
        answer = await rawhttp.request(host, port, "GET", path)
        if answer.status != 200:
            raise BenchmarkError(f"GET {path} during the burst answered {answer.status}")
        latencies.append(time.perf_counter() - started)
        await asyncio.sleep(READ_EVERY_S)
    return latencies


def _host_port(base_url: str) -> tuple[str, int]:
    url = httpx.URL(base_url)
    return url.host, url.port or 80


def client_limits(concurrency: int) -> httpx.Limits:
    """A connection per request in flight (httpx's default pool of 100 would queue the rest
    on the client side and count that wait as server latency)."""
    return httpx.Limits(max_connections=concurrency + 4, max_keepalive_connections=concurrency + 4)
