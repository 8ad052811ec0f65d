"""Two ``lsm worker`` processes on PostgreSQL share one environment's work, and survive kill -9.

1,000 concurrent updates of 1,000 networks; one worker is killed with SIGKILL while it holds a
running compile. Every instance must reach its next state with exactly one validation, every
compile must end in success (the survivor takes over the dead worker's leases), both workers
must have done work, and the desired-state versions must be gap-free with every update in the
last one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url
from sqlmodel import col, select

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api
from lsm.store.tables import CompileRow
from tests.conftest import POSTGRES_URL, TEST_LIFECYCLES

NETWORKS = str(Path(__file__).resolve().parent.parent.parent / "examples" / "networks")
COUNT = 1000
#: what ``lsm worker`` prints once its service loop runs (``lsm.cli.run.run_until_interrupted``)
READY = "Ctrl-C to stop"

pytestmark = pytest.mark.skipif(POSTGRES_URL is None, reason="needs LSM_TEST_POSTGRES_URL (PostgreSQL)")


@pytest.fixture
def database_url() -> Iterator[str]:
    """A database of its own: worker processes get only a URL, no per-test schema."""
    assert POSTGRES_URL is not None
    name = f"lsm_scale_{uuid.uuid4().hex[:10]}"
    admin = make_url(POSTGRES_URL).set(drivername="postgresql")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def wait_for(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def kill_while(process: subprocess.Popen[str], condition: Callable[[], bool], timeout: float) -> bool:
    """``kill -9`` ``process`` at a moment ``condition`` holds; False if it never did.

    The process is stopped (SIGSTOP) while the condition is looked at, so that what was seen
    is still true when the kill lands: seen running and killed a moment later, a worker could
    finish its compile in between and leave nothing to take over.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        os.kill(process.pid, signal.SIGSTOP)
        if condition():
            os.kill(process.pid, signal.SIGKILL)
            return True
        os.kill(process.pid, signal.SIGCONT)
        time.sleep(0.2)
    return False


def serving(log: Path) -> bool:
    """Whether the worker writing ``log`` runs its service loop (its banner, maybe wrapped)."""
    return READY in " ".join(log.read_text().split())


def start_worker(url: str, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsm.cli",
            "worker",
            "--database",
            url,
            "--model",
            NETWORKS,
            "--lease-ttl",
            "3",
            "--poll",
            "0.5",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),  # a file, never a pipe nobody reads: a full pipe would stall the worker
        text=True,
        start_new_session=True,
    )


def test_two_workers_share_the_work_and_one_killed_mid_batch_loses_nothing(
    database_url: str, tmp_path: Path
) -> None:
    config = ServerConfig(
        database_url=database_url, model=NETWORKS, lifecycle_dirs=[TEST_LIFECYCLES], embedded_worker=False
    )
    engine = build_api(config)
    engine.start()
    workers: list[subprocess.Popen[str]] = []
    try:
        ids = engine.facades.inventory.import_instances(
            RequestContext.local(), "network", "up", [{"name": f"n{i}", "hosts": 2} for i in range(COUNT)]
        )
        engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
        engine.processing.drain()
        first_version = engine.facades.desired_state.list_desired_states(RequestContext.local(), limit=1)[
            0
        ].version
        log_files = [tmp_path / f"worker-{n}.log" for n in range(2)]
        workers = [start_worker(database_url, log) for log in log_files]
        # both serve before the first update: a worker still starting (model import, connections)
        # when the burst comes leaves it all to the other, and the victim would hold nothing
        assert wait_for(lambda: all(serving(log) for log in log_files), timeout=60), [
            log.read_text()[-2000:] for log in log_files
        ]
        victim = workers[0]

        def update(instance_id: str) -> None:
            current = engine.facades.inventory.get_instance(RequestContext.local(), "network", instance_id)
            engine.facades.inventory.update_instance(
                RequestContext.local(),
                "network",
                instance_id,
                current_version=current.version,
                attributes={"hosts": 3},
            )

        def victim_runs_something() -> bool:
            with engine.db.read() as session:
                query = select(CompileRow).where(CompileRow.status == "running")
                return any(f":{victim.pid}:" in (row.lease_owner or "") for row in session.exec(query))

        with ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(update, i) for i in ids]
            assert kill_while(victim, victim_runs_something, timeout=120), (
                "the first worker never ran anything"
            )
            for future in futures:
                future.result()

        def all_through() -> bool:
            states = Counter(
                i.state
                for i in engine.facades.inventory.list_instances(
                    RequestContext.local(), "network", limit=10_000
                )
            )
            with engine.db.read() as session:
                active = session.exec(
                    select(CompileRow).where(col(CompileRow.status).in_(["queued", "running"]))
                ).all()
            return states == Counter({"update_inprogress": COUNT}) and not active

        if not wait_for(all_through, timeout=300):
            with engine.db.read() as session:
                rows = list(session.exec(select(CompileRow)))
            kinds = Counter((c.kind, c.status, c.attempts) for c in rows)
            stuck = [
                i
                for i in engine.facades.inventory.list_instances(
                    RequestContext.local(), "network", limit=10_000
                )
                if i.state != "update_inprogress"
            ]
            sample = [c for c in rows if c.instance_id == stuck[0].id] if stuck else []
            for process in workers:
                if process.poll() is None:
                    process.send_signal(signal.SIGUSR1)  # its threads' stacks go to its log
            time.sleep(2)
            logs = "\n".join((tmp_path / f"worker-{n}.log").read_text()[-6000:] for n in range(2))
            with psycopg.connect(database_url) as conn:
                activity = conn.execute(
                    "SELECT pid, state, wait_event_type, wait_event, left(query, 120) FROM pg_stat_activity "
                    "WHERE datname = current_database()"
                ).fetchall()
            logs += f"\n{activity}\nworkers alive: {[p.poll() for p in workers]}"
            states = Counter(i.state for i in stuck)
            raise AssertionError(
                f"not through: {states}\n{kinds}\n"
                f"{[(c.status, c.lease_owner, c.lease_expires, c.report, c.params) for c in sample]}\n{logs}"
            )
        with engine.db.read() as session:
            compiles = list(session.exec(select(CompileRow)))
        assert Counter(c.status for c in compiles) == Counter({"success": len(compiles)})
        workers_seen = {c.report.get("worker") for c in compiles if c.report.get("worker")}
        assert len(workers_seen) >= 2, workers_seen  # both did work (the victim before it died)
        assert any(c.attempts > 1 for c in compiles), "nothing was taken over from the killed worker"
        for instance_id in ids:
            log = engine.facades.inventory.instance_log(RequestContext.local(), "network", instance_id)
            validated = [e for e in log if e.source == "update_start" and e.target == "update_acknowledged"]
            assert len(validated) == 1, log  # exactly once: no request ran twice
        versions = [
            v.version
            for v in engine.facades.desired_state.list_desired_states(RequestContext.local(), limit=10_000)
        ]
        assert sorted(versions) == list(range(1, max(versions) + 1))  # no gap, no duplicate
        assert max(versions) > first_version
        latest = engine.facades.desired_state.desired_state(RequestContext.local(), max(versions))
        assert all(len(latest.sets[i]) == 3 for i in ids)  # every update is in the last version
    finally:
        for process in workers:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        engine.stop()
