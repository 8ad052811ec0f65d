"""Agents under faults, as real processes: a burst with two agents, and kill -9 before the feedback.

* Two ``lsm agent`` processes, a ``lsm worker`` and the API (``lsm server --no-worker``) on
  PostgreSQL under a burst of orders: every instance reaches ``up``, nothing is left
  ``deploying``, and no process's log names a deadlock or shows a traceback (the agents used
  to deadlock on leases taken in random order and rows locked in no fixed order).
* ``lsm server`` killed by its own fault hook (``LSM_FAULT_KILL_AFTER_RESULTS``) right after
  a batch's results commit, before their lifecycle feedback; restarted, every instance reaches
  ``up`` through the recovery pass, long before the periodic repair (600 s by default) could
  have done it. On SQLite and PostgreSQL.

The processes come from ``benchmarks.faults`` (the same code measures the full-size figures);
every wait is bounded polling, every process is stopped by the test.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.faults import Cluster, send_orders
from benchmarks.processes import Processes, children_of
from lsm.deploy.batches import KILL_AFTER_RESULTS
from tests.conftest import POSTGRES_URL
from tests.runtime.test_scale_out import database_url
from tests.waiting import wait_until

__all__ = ["database_url"]

#: bounds of the waits (a loaded 2-core CI machine); the repair would need 600 s
BOUND = 120.0
needs_postgres = pytest.mark.skipif(POSTGRES_URL is None, reason="needs LSM_TEST_POSTGRES_URL (PostgreSQL)")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_postgres)])
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lsm.db'}"
    else:
        yield request.getfixturevalue("database_url")


@needs_postgres
def test_two_agents_under_a_burst_deadlock_nowhere_and_leave_nothing_deploying(
    database_url: str, tmp_path: Path
) -> None:
    with Processes(tmp_path, cwd=tmp_path) as processes:
        cluster = Cluster(processes, database_url)
        cluster.start_server(worker=False)
        cluster.start_worker(0)
        for n in range(2):
            cluster.start_agent(n)
        cluster.wait_agents(2, time.monotonic() + BOUND)

        sent = asyncio.run(send_orders(cluster.base_url, [f"b{i}" for i in range(300)], concurrency=30))
        assert len(sent["accepted"]) == 300, sent["errors"]
        states = cluster.wait_all_up(time.monotonic() + BOUND, cluster.check_alive)

        assert states == {"up": 300}
        assert cluster.counts()[1] == {"deployed": 300}
        assert cluster.problems() == {}
        assert cluster.pending_feedback() == 0


def test_a_server_killed_between_results_and_feedback_brings_every_order_up_on_restart(
    any_url: str, tmp_path: Path
) -> None:
    with Processes(tmp_path, cwd=tmp_path) as processes:
        cluster = Cluster(processes, any_url)
        # --workers 0: the agent runs in the server process, the one the hook kills
        victim = cluster.start_server(env={KILL_AFTER_RESULTS: "1"}, workers=0)
        sent = asyncio.run(send_orders(cluster.base_url, [f"k{i}" for i in range(20)], concurrency=4))
        deadline = time.monotonic() + BOUND
        while victim.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert victim.process.returncode == -9, victim.tail()  # it killed itself after its results
        assert cluster.pending_feedback() >= 1  # and so left their feedback undone
        states, _statuses = cluster.counts()
        assert states.get("creating", 0) >= 1, states

        cluster.start_server(workers=0)  # no hook: the recovery pass at its start finishes the feedback
        states = cluster.wait_all_up(time.monotonic() + BOUND, cluster.check_alive)

        assert sum(states.values()) >= len(sent["accepted"]) >= 1
        assert cluster.pending_feedback() == 0
        assert cluster.problems() == {}


def test_the_default_servers_worker_killed_mid_burst_is_started_again_and_strands_nothing(
    any_url: str, tmp_path: Path
) -> None:
    """``lsm server`` as a user starts it: its worker process (compiles and the agent) is killed
    with -9 in the middle of a burst; the server starts it again and every order reaches up."""
    with Processes(tmp_path, cwd=tmp_path) as processes:
        cluster = Cluster(processes, any_url)
        server = cluster.start_server()
        (worker,) = children_of(server.process.pid)

        async def burst() -> dict[str, Any]:
            return await send_orders(cluster.base_url, [f"w{i}" for i in range(30)], concurrency=4)

        sent: dict[str, Any] = {}
        sender = threading.Thread(target=lambda: sent.update(asyncio.run(burst())))
        sender.start()
        try:
            wait_until(lambda: cluster.counts()[0].get("up", 0) >= 1, "a first order is up")
            os.kill(worker, signal.SIGKILL)
        finally:
            sender.join(BOUND)
        wait_until(
            lambda: [p for p in children_of(server.process.pid) if p != worker],
            "the server started a new worker",
        )
        states = cluster.wait_all_up(time.monotonic() + BOUND, cluster.check_alive)

        assert sum(states.values()) == len(sent["accepted"]) == 30
        assert cluster.pending_feedback() == 0
        assert cluster.problems() == {}
        assert f"(pid {worker}) exited with status -9" in server.log.read_text()
