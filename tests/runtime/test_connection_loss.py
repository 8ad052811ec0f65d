"""Every connection to the database is ended three times during a burst of orders (H1).

A real ``lsm server --no-worker``, ``lsm worker`` and ``lsm agent`` on a PostgreSQL database of
their own, a burst of creates over HTTP (each with an ``Idempotency-Key``, retried on a 503
after its ``Retry-After``), and ``pg_terminate_backend`` of every other backend of the database
three times while the burst runs, each time once a compile is running (so that the worker's lock
connection is among them). Every order must be accepted exactly once with no 500 in any
answer, every instance must reach ``up`` (validated, exported and deployed) with every compile a
success, the worker must still compile an order made after the last fault, and no process may
log a traceback (a lost connection is an operational event: one warning line).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.runtime.test_scale_out import NETWORKS, database_url, serving, start_worker
from tests.waiting import wait_until

__all__ = ["database_url"]  # the fixture, shared with the scale-out test

ORDERS = 240
FAULTS = 3
NETWORK = "/lsm/v1/service_inventory/network"
#: tries of one order (a 503 or a transport error each); far more than three faults need
TRIES = 50

pytestmark = pytest.mark.skipif(POSTGRES_URL is None, reason="needs LSM_TEST_POSTGRES_URL (PostgreSQL)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(url: str, port: int, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsm.cli",
            "server",
            "--database",
            url,
            "--model",
            NETWORKS,
            "--port",
            str(port),
            "--no-worker",
            "--no-access-log",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),  # a file, never a pipe nobody reads
        text=True,
        start_new_session=True,
    )


def start_agent(url: str, log: Path, state_dir: Path) -> subprocess.Popen[str]:
    """An ``lsm agent`` deploying the networks' config files under ``state_dir``."""
    return subprocess.Popen(
        [sys.executable, "-m", "lsm.cli", "agent", "--database", url, "--lease-ttl", "3"],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        text=True,
        start_new_session=True,
        env={**os.environ, "LSM_STATE_DIR": str(state_dir)},
    )


@pytest.fixture
def processes(database_url: str, tmp_path: Path) -> Iterator[tuple[str, list[Path]]]:
    """The server, the worker and an agent on ``database_url``: the server's base URL and their
    logs; stopped (SIGINT, then SIGKILL past 30 s) by the fixture."""
    port = _free_port()
    logs = [tmp_path / "server.log", tmp_path / "worker.log", tmp_path / "agent.log"]
    started = [start_server(database_url, port, logs[0])]
    base = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            assert started[0].poll() is None, logs[0].read_text()
            try:
                return httpx.get(f"{base}/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        wait_until(healthy, "the server answers /health")  # it created the schema: now the worker
        started.append(start_worker(database_url, logs[1]))
        wait_until(lambda: serving(logs[1]), "the worker serves")
        started.append(start_agent(database_url, logs[2], tmp_path / "state"))
        yield base, logs
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def terminate_every_backend(url: str) -> int:
    """End every other connection to the database (the server's, the worker's: pooled, locks,
    LISTEN); the number ended. The two-argument form waits until each is gone."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return sum(1 for (ended,) in rows if ended)


def compile_running(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM lsm_compile WHERE status = 'running'").fetchone()
    return bool(row and row[0])


def unsuccessful(url: str) -> list[tuple[object, ...]]:
    """The compiles that did not succeed: what a failed run needs to be understood."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT kind, status, attempts, report FROM lsm_compile WHERE status <> 'success'"
        ).fetchall()


class Burst:
    """Orders sent from a pool of threads; every answer's status is kept."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.statuses: Counter[int] = Counter()
        self.transport_errors = 0
        self.accepted: dict[str, str] = {}  # name -> instance id
        self._lock = threading.Lock()

    def order(self, name: str) -> None:
        key = uuid.uuid4().hex  # the same key at every try: one instance whatever was lost
        with httpx.Client(base_url=self.base, timeout=60) as http:
            for _ in range(TRIES):
                try:
                    body = {"attributes": {"name": name, "hosts": 2}}
                    answer = http.post(NETWORK, json=body, headers={"Idempotency-Key": key})
                except httpx.TransportError:
                    with self._lock:
                        self.transport_errors += 1
                    time.sleep(0.2)
                    continue
                with self._lock:
                    self.statuses[answer.status_code] += 1
                if answer.status_code == 503:
                    time.sleep(float(answer.headers["Retry-After"]))
                    continue
                assert answer.status_code == 200, answer.text
                with self._lock:
                    self.accepted[name] = answer.json()["id"]
                return
        raise AssertionError(f"order {name} was never accepted in {TRIES} tries")

    def count(self) -> int:
        with self._lock:
            return len(self.accepted)


def states(base: str) -> Counter[str]:
    answer = httpx.get(f"{base}{NETWORK}", params={"limit": 10_000}, timeout=60)
    assert answer.status_code == 200, answer.text
    return Counter(i["state"] for i in answer.json())


def compile_statuses(url: str) -> Counter[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT status, count(*) FROM lsm_compile GROUP BY status").fetchall()
    return Counter({status: count for status, count in rows})


def test_every_connection_ended_three_times_during_a_burst_strands_nothing(
    database_url: str, processes: tuple[str, list[Path]]
) -> None:
    base, logs = processes
    burst = Burst(base)
    ended: list[int] = []
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(burst.order, f"n{i}") for i in range(ORDERS)]
        for fault in range(1, FAULTS + 1):
            wait_until(lambda f=fault: burst.count() >= ORDERS * f // (FAULTS + 1), f"{fault}/4 of the burst")  # type: ignore[misc]  # mypy types no lambda default
            wait_until(lambda: compile_running(database_url), "a compile runs", seconds=120)
            ended.append(terminate_every_backend(database_url))
        for future in futures:
            future.result()
    assert all(n > 0 for n in ended), ended
    assert len(set(burst.accepted.values())) == ORDERS  # one instance per order

    def all_through() -> bool:
        counts = compile_statuses(database_url)
        return states(base) == Counter({"up": ORDERS}) and not (counts["queued"] or counts["running"])

    wait_until(all_through, "every instance validated, exported and deployed", seconds=300)
    assert set(compile_statuses(database_url)) == {"success"}, unsuccessful(database_url)
    # the worker still compiles after the last fault
    Burst(base).order("after")
    wait_until(lambda: states(base)["up"] == ORDERS + 1, "the order after the faults is up")
    assert 500 not in burst.statuses, burst.statuses
    for log in logs:
        text = log.read_text()
        assert "Traceback" not in text, f"{log.name}:\n{text[-6000:]}"
    # what the faults did, for a reader of a failed run: -s shows it
    print(f"terminated {ended}; answers {dict(burst.statuses)}; transport errors {burst.transport_errors}")
    assert os.path.exists(logs[0])
