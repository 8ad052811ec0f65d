"""A halt survives ``kill -9`` of every process, and a resume lets what queued run.

Real processes, as an operator runs them: ``lsm server --no-worker``, ``lsm worker`` and ``lsm
agent`` over one database (a SQLite file, or a PostgreSQL database of its own). A second
environment, never halted, is the witness that the worker and the agent are alive and claiming:
once its order is ``up``, they have looked past the halted environment many times.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy.engine import make_url

from lsm.client import NO_RETRY, Client
from tests.conftest import BACKENDS, POSTGRES_URL
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
MODEL = "tests.deploy.file_model"
#: a loaded machine starts three interpreters and imports the engine in each: a liveness bound
BOUND = 180.0


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database the processes share (they get only a URL: no per-test schema)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'lsm.db'}"
        return
    assert POSTGRES_URL is not None
    name = f"lsm_halt_{uuid.uuid4().hex[:10]}"
    admin = make_url(POSTGRES_URL).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Processes:
    """The server, worker and agent processes of one test; ``kill`` sends SIGKILL to them all."""

    def __init__(self, url: str, tmp_path: Path) -> None:
        self.url = url
        self.tmp_path = tmp_path
        self.port = _free_port()
        self.running: list[subprocess.Popen[str]] = []
        self.starts = 0

    def _start(self, role: str, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LSM_")}
        env.update(PYTHONPATH=str(ROOT), LSM_STATE_DIR=str(self.tmp_path / "state"))
        log = self.tmp_path / f"{role}-{self.starts}.log"
        self.running.append(
            subprocess.Popen(
                [sys.executable, "-m", "lsm.cli", role, "--database", self.url, *args],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log.open("w"),  # a file: a pipe nobody reads would stall the process
                text=True,
                start_new_session=True,
            )
        )

    def start(self) -> None:
        self.starts += 1
        self._start("server", "--no-worker", "--model", MODEL, "--port", str(self.port), "--no-access-log")
        self._start("worker", "--model", MODEL, "--poll", "0.2", "--lease-ttl", "3")
        self._start("agent", "--poll", "0.2", "--lease-ttl", "3")
        wait_until(self.answers, "the server answers /health", seconds=BOUND)

    def answers(self) -> bool:
        dead = [p.args for p in self.running if p.poll() is not None]
        assert not dead, f"exited: {dead}\n{self.logs()}"
        try:
            return httpx.get(f"{self.base}/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, environment: str) -> Client:
        return Client(self.base, environment, retry=NO_RETRY)

    def logs(self) -> str:
        found = sorted(self.tmp_path.glob("*.log"))
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in found)

    def kill(self) -> None:
        for process in self.running:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
        self.running.clear()

    def stop(self) -> None:
        for process in self.running:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)
        self.running.clear()


def state(client: Client, entity: str, ref: str) -> str:
    return str(client.get_instance(entity, ref)["state"])


def test_a_halt_survives_kill_9_of_every_process_and_the_resume_brings_the_order_up(
    database_url: str, tmp_path: Path
) -> None:
    processes = Processes(database_url, tmp_path)
    processes.start()
    try:
        lab = processes.client("default")
        lab.create_environment("witness", MODEL)
        witness = processes.client("witness")
        assert lab.halt()["halted"] is True
        router = lab.create_instance("router", {"name": "edge"})
        assert router["state"] == "start"  # the order is taken

        def witness_up(name: str) -> None:
            made = witness.create_instance("router", {"name": name})
            wait_until(lambda: processes.answers() and state(witness, "router", made["id"]) == "up", name)

        witness_up("w1")  # the worker and the agent claim: past the halted environment too
        assert state(lab, "router", router["id"]) == "start"
        assert [c["status"] for c in lab.list_compiles()] == ["queued"]  # its validation waits
        assert lab.resources() == []
        assert not (tmp_path / "state" / "routers" / "edge.conf").exists()

        processes.kill()
        processes.start()
        assert lab.get_environment()["halted"] is True
        witness_up("w2")  # the new processes claim too
        assert state(lab, "router", router["id"]) == "start"
        assert not (tmp_path / "state" / "routers" / "edge.conf").exists()

        assert lab.resume()["halted"] is False
        wait_until(lambda: state(lab, "router", router["id"]) == "up", "the order reaches up", seconds=BOUND)
        assert (tmp_path / "state" / "routers" / "edge.conf").read_text() == "motd=hello"
    except BaseException:
        print(processes.logs())
        raise
    finally:
        processes.stop()
