"""The machine's floor for PATCH latency: the e2e burst against an endpoint that does nothing.

Why: the e2e targets ask for PATCH p50 < 50 ms and p99 < 250 ms with 1,000 requests sent at
once. No server answers faster than the HTTP stack it runs on, on the cores it shares with the
load generator. This measures that stack alone: uvicorn, started as ``lsm server`` starts it
(its default event loop and HTTP parser; no access log, the cheapest setting), serving an ASGI
app that reads each body and answers a few bytes of JSON, hit by the e2e load generator
(``benchmarks.load.patch_all``) with the same paths, bodies and concurrency. Whatever a real
server does per request comes on top of this; ``benchmarks e2e`` prints it beside the real
latency, measured after the real server has stopped.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from starlette.types import Receive, Scope, Send

from benchmarks import load
from benchmarks.harness import REPO, BenchmarkError
from benchmarks.processes import HOST, Processes, free_port
from benchmarks.stats import quantiles

START_TIMEOUT_S = 60.0
_ANSWER = b'{"ok":true}'
_HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(_ANSWER)).encode())]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """Any request: read its body, answer 200 with a fixed JSON body. Nothing else."""
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": _ANSWER})


def measure_floor(updates: int, concurrency: int, run_dir: Path, timeout: float) -> dict[str, Any]:
    """PATCH ``updates`` ports (ids that exist nowhere: the app reads nothing) at most
    ``concurrency`` at once; the latency quantiles (s) and the errors by kind."""
    targets = [
        load.Target(id=str(uuid.uuid4()), version=1, router="", name="", new_mtu=1500 + i)
        for i in range(updates)
    ]
    with Processes(run_dir, cwd=REPO) as processes:
        port = free_port()
        base_url = f"http://{HOST}:{port}"
        argv = [sys.executable, "-m", "uvicorn", f"{__name__}:app", "--host", HOST, "--port", str(port)]
        server = processes.start("floor", [*argv, "--log-level", "warning", "--no-access-log"])
        processes.wait_healthy(server, base_url, START_TIMEOUT_S)
        deadline = time.monotonic() + timeout
        results = asyncio.run(load.patch_all(base_url, targets, concurrency=concurrency, deadline=deadline))
    errors = load.errors_by_kind(results)
    latency = quantiles([r.latency_s for r in results if r.status is not None])
    if latency is None:
        raise BenchmarkError(f"the do-nothing endpoint answered none of {updates} PATCHes: {errors}")
    return {"patch_latency_s": latency, "errors": errors}
