"""The ``lsm server`` and ``lsm worker`` subprocesses of the ``e2e`` scenario, and their end.

Why through the command line and not ``lsm.runtime``: the scenario measures what an operator
runs, and the command lines are the contract that survives refactorings of the runtime. Each
process starts in its own session (process group), listens on 127.0.0.1 only, and writes its
output to a log file under the run's directory (a pipe nobody reads would fill and block it).

``Processes`` is a context manager: leaving it, also on an error or Ctrl-C, ends every process
it started, by process group: SIGTERM, then SIGKILL after a grace period. It never signals
anything it did not start.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from benchmarks.harness import BenchmarkError

HOST = "127.0.0.1"
#: seconds a process gets to stop after SIGTERM before its group is killed
GRACE_S = 10.0


def lsm_command() -> list[str]:
    """The ``lsm`` script installed next to this interpreter (the venv's), else the one on PATH."""
    local = Path(sys.executable).parent / "lsm"
    if local.is_file():
        return [str(local)]
    found = shutil.which("lsm")
    if found is None:
        raise BenchmarkError("the `lsm` command is not installed (pip install -e .)")
    return [found]


def free_port() -> int:
    """A port nobody listens on right now (the server binds it a moment later: a small race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Started:
    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def warnings(self, limit: int = 50) -> list[str]:
        """The first lines of its output that are not uvicorn's INFO lines (warnings, errors,
        tracebacks): kept in the result, because the log itself goes with the run's directory."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if line.strip() and not line.startswith("INFO:")][:limit]

    def tail(self, lines: int = 20) -> str:
        """The last lines of its output (for an error message: why did it die?)."""
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class Processes:
    """Every subprocess of one run; all of them end when the ``with`` block is left."""

    def __init__(self, directory: Path, *, cwd: Path) -> None:
        self.directory = directory
        self.cwd = cwd  # not the repository: ``lsm`` reads ./lsm.toml and ./pyproject.toml
        self.started: list[Started] = []

    def start(self, name: str, argv: list[str], *, env: dict[str, str] | None = None) -> Started:
        """Start ``argv`` (``env``: more environment variables for it)."""
        log = self.directory / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                argv,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            )
        started = Started(name, process, log)
        self.started.append(started)
        return started

    def wait_healthy(self, server: Started, url: str, timeout: float) -> float:
        """Poll ``GET /health`` until 200; the seconds it took. Fails when the server dies."""
        began = time.monotonic()
        deadline = began + timeout
        with httpx.Client(base_url=url, timeout=2.0) as client:
            while time.monotonic() < deadline:
                if server.process.poll() is not None:
                    raise BenchmarkError(
                        f"{server.name} exited with status {server.process.returncode} while starting:\n"
                        f"{server.tail()}"
                    )
                try:
                    if client.get("/health").status_code == 200:
                        return time.monotonic() - began
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
        raise BenchmarkError(f"{server.name} did not answer GET /health within {timeout} s:\n{server.tail()}")

    def check_alive(self) -> None:
        """Fail when a process died during the run (its log tail says why)."""
        for started in self.started:
            if started.process.poll() is not None:
                raise BenchmarkError(
                    f"{started.name} exited with status {started.process.returncode}:\n{started.tail()}"
                )

    def stop_all(self) -> dict[str, int | None]:
        """SIGTERM every group, wait up to ``GRACE_S``, SIGKILL what is left; the exit codes."""
        for started in self.started:
            _signal_group(started.process, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        for started in self.started:
            try:
                started.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
        for started in self.started:
            _signal_group(started.process, signal.SIGKILL)
            try:
                started.process.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        return {s.name: s.process.returncode for s in self.started}

    def __enter__(self) -> Processes:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_all()


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """Signal the process group of ``process`` (its own session: the pgid is its pid), only while
    ``process`` was not reaped: after that its pid, and so the group id, may belong to another."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def children_of(pid: int) -> list[int]:
    """The pids of ``pid``'s live children (Linux ``/proc``; the children of every thread):
    the worker processes ``lsm server`` starts, the compile processes under a worker."""
    return [
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    ]
