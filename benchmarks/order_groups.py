"""The multi-entity part of ``python -m benchmarks orders``: orders of routers, ports and tunnels.

Two measurements over the same server and event stream as the single-instance orders
(``benchmarks.orders``), on ``benchmarks/deploy_model.py``'s network (null handlers):

* ``--groups N``: N orders one after another, each 1 router, 4 ports and 1 tunnel between two
  of the ports (``$ref``s between the items), from the POST to ``done`` (every item ``up``, seen
  on the event stream): p50/p95;
* ``--big N``: one order of N items (routers with 4 ports each): how long until the POST was
  answered (accepted, one transaction) and until every item was ``up``.

The environment's selector is set to ``relation_closure`` first (a tunnel's compiles need its
ports and routers).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from benchmarks.harness import BenchmarkError
from benchmarks.stats import percentile


def network_items(
    prefix: str, *, routers: int = 1, ports: int = 4, tunnel: bool = True
) -> list[dict[str, Any]]:
    """``routers`` routers with ``ports`` ports each, and a tunnel between the first two ports."""
    items: list[dict[str, Any]] = []
    for r in range(routers):
        name = f"{prefix}r{r}"
        items.append({"action": "create", "entity": "router", "ref": name, "attributes": {"name": name}})
        for p in range(ports):
            attributes = {"name": f"eth{p}", "router": {"$ref": name}}
            items.append(
                {"action": "create", "entity": "port", "ref": f"{name}p{p}", "attributes": attributes}
            )
    if tunnel:
        ends = {"a": {"$ref": f"{prefix}r0p0"}, "b": {"$ref": f"{prefix}r0p1"}}
        items.append({"action": "create", "entity": "tunnel", "attributes": {"name": f"{prefix}t", **ends}})
    return items


async def use_relation_closure(client: httpx.AsyncClient) -> None:
    response = await client.put(
        "/api/v1/environments/default/settings/selector", json={"value": "relation_closure"}
    )
    if response.status_code != 200:
        raise BenchmarkError(f"selector setting: HTTP {response.status_code} {response.text[:300]}")


async def place(client: httpx.AsyncClient, items: list[dict[str, Any]]) -> set[str]:
    response = await client.post("/lsm/v1/order", json={"items": items}, timeout=600.0)
    if response.status_code != 200:
        raise BenchmarkError(f"order: HTTP {response.status_code} {response.text[:300]}")
    return {str(i["instance_id"]) for i in response.json()["items"]}


async def groups(
    client: httpx.AsyncClient, watch: Any, count: int, timeout: float, check: Any
) -> dict[str, Any]:
    """``count`` network orders one at a time: POST to every item ``up``."""
    deadline = time.monotonic() + timeout
    latencies: list[float] = []
    for n in range(count):
        sent = time.perf_counter()
        ids = await place(client, network_items(f"g{n}"))
        await watch.until(ids, deadline, check)
        latencies.append((max(watch.up_at[i] for i in ids) - sent) * 1000)
    return {
        "orders": count,
        "items_per_order": 6,
        "p50_ms": round(percentile(latencies, 50), 1),
        "p95_ms": round(percentile(latencies, 95), 1),
        "max_ms": round(max(latencies), 1),
        "latencies_ms": [round(v, 1) for v in latencies],
    }


async def big(
    client: httpx.AsyncClient, watch: Any, items: int, timeout: float, check: Any
) -> dict[str, Any]:
    """One order of ``items`` items (routers of 4 ports): accepted, and every item ``up``."""
    routers = max(1, items // 5)
    order = network_items("big", routers=routers, tunnel=False)[:items]
    first = time.perf_counter()
    ids = await place(client, order)
    accepted = time.perf_counter() - first
    await watch.until(ids, time.monotonic() + timeout, check)
    done = max(watch.up_at[i] for i in ids) - first
    return {"items": len(order), "accepted_s": round(accepted, 3), "done_s": round(done, 3)}
