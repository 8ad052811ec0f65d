"""``lsm server`` starts its compile worker (and agent) as processes, watches and stops them.

Real processes throughout: a child killed with -9 is started again, a stop asks the children to
stop and they do, a child never outlives a server killed with -9 (the kernel kills it), and the
default ``lsm server`` takes an order to ``up`` through its worker process.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from benchmarks.processes import children_of
from lsm.runtime.supervisor import Child, Supervisor, worker_children
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "router_port"
#: a child that stops cleanly on SIGINT (exit 0) and otherwise sleeps; with ``READY_DIR`` set it
#: says when it is ready for SIGINT (a file named by its pid)
SLEEPER = (
    "import os, time\n"
    "try:\n"
    "    if os.environ.get('READY_DIR'):\n"
    "        open(os.path.join(os.environ['READY_DIR'], str(os.getpid())), 'w').close()\n"
    "    time.sleep(600)\n"
    "except KeyboardInterrupt:\n"
    "    pass\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its new parent) counts as gone
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def test_a_killed_child_is_started_again_and_stop_stops_it_cleanly(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    child = Child(name="sleeper", argv=[sys.executable, "-c", SLEEPER], env={"READY_DIR": str(tmp_path)})
    supervisor = Supervisor([child], grace=30)
    with caplog.at_level(logging.WARNING, logger="lsm.supervisor"):
        supervisor.start()
        try:
            first = supervisor.pids()
            assert len(first) == 1
            wait_until(lambda: (tmp_path / str(first[0])).exists(), "the child is ready")
            os.kill(first[0], signal.SIGKILL)
            wait_until(
                lambda: supervisor.pids() and supervisor.pids() != first, "the killed child started again"
            )
            second = supervisor.pids()[0]
            wait_until(lambda: (tmp_path / str(second)).exists(), "the new child is ready")
        finally:
            supervisor.stop()
    assert not _alive(second)
    assert child.exits[0] == -signal.SIGKILL and child.restarts == 1
    assert child.process is not None and child.process.returncode == 0  # stopped by SIGINT, cleanly
    lines = [r.getMessage() for r in caplog.records]
    assert any(f"sleeper (pid {first[0]}) exited with status -9" in line for line in lines), lines
    assert not [r for r in caplog.records if r.exc_info]


def test_a_child_that_ignores_stop_is_killed_after_the_grace() -> None:
    stubborn = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)\n"
    child = Child(name="stubborn", argv=[sys.executable, "-c", stubborn], env={})
    supervisor = Supervisor([child], grace=0.5)
    supervisor.start()
    wait_until(lambda: child.process is not None, "the child started")
    time.sleep(0.3)  # let it install its handler: the test is about a child that ignores SIGINT
    supervisor.stop()
    assert child.process is not None and child.process.returncode == -signal.SIGKILL


def test_a_child_never_outlives_a_supervisor_killed_with_9(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    grandchild = f"from lsm.runtime.supervisor import die_with_parent\ndie_with_parent()\n{SLEEPER}"
    parent = textwrap.dedent(
        f"""
        import sys, time
        from lsm.runtime.supervisor import Child, Supervisor
        child = Child(name="child", argv=[sys.executable, "-c", {grandchild!r}], env={{}})
        supervisor = Supervisor([child])
        supervisor.start()
        open({str(pid_file)!r}, "w").write(str(child.process.pid))
        time.sleep(600)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-c", parent], env=env)
    try:
        wait_until(lambda: pid_file.exists() and pid_file.read_text(), "the supervisor started its child")
        child_pid = int(pid_file.read_text())
        time.sleep(1.0)  # the child is past its import and has asked to die with its parent
        assert _alive(child_pid)
    finally:
        server.kill()
        server.wait()
    wait_until(lambda: not _alive(child_pid), "the child of a killed supervisor is gone")


def test_worker_children_carry_each_ones_settings() -> None:
    children = worker_children(['{"role": "a"}', '{"role": "b"}'])
    assert [c.name for c in children] == ["worker 1", "worker 2"]
    assert [c.env["LSM_SUPERVISED_SETTINGS"] for c in children] == ['{"role": "a"}', '{"role": "b"}']
    assert all(c.argv[-3:] == ["-m", "lsm.cli", "worker"] for c in children)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSM_")}
    env["PYTHONPATH"] = str(REPO)
    argv = [sys.executable, "-m", "lsm.cli", "server", "--model", str(EXAMPLE), "--port", str(port)]
    argv += ["--database", f"sqlite:///{tmp_path / 'lsm.db'}", *extra]
    process = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return process, port


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_the_default_server_orders_to_up_through_its_worker_process_and_takes_it_along(
    tmp_path: Path,
) -> None:
    server, port = _server(tmp_path)
    try:
        wait_until(lambda: _answers(port) or server.poll() is not None, "the server answers")
        assert server.poll() is None
        workers = children_of(server.pid)
        assert len(workers) == 1
        assert "worker" in Path(f"/proc/{workers[0]}/cmdline").read_text()
        base = f"http://127.0.0.1:{port}/lsm/v1/service_inventory/router"
        made = httpx.post(base, json={"attributes": {"name": "r1", "mgmt_ip": "10.0.0.1"}}, timeout=30)
        assert made.status_code == 200, made.text

        def up() -> bool:
            return bool(httpx.get(f"{base}/{made.json()['id']}", timeout=30).json()["state"] == "up")

        wait_until(up, "the router is up")  # validated, exported and deployed by the worker process
    finally:
        server.kill()
        output = server.communicate(timeout=30)[0]
    wait_until(lambda: not any(_alive(w) for w in workers), "the worker of a killed server is gone")
    assert "Traceback" not in output, output


def test_more_than_one_worker_process_on_sqlite_is_refused(tmp_path: Path) -> None:
    server, _ = _server(tmp_path, "--workers", "2")
    output = server.communicate(timeout=60)[0]
    assert server.returncode != 0
    assert "server_workers" in output and "SQLite allows one worker process" in output
