"""``lsm instance log --follow`` as a real process against a real server, through a real TCP relay
that the test can cut (a dropped connection): it prints the log, then each new line, resumes
with ``Last-Event-ID`` after the drop, and ends with exit code 0 on Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api.fixtures import engine, url
from tests.waiting import wait_until

__all__ = ["engine", "url"]

REPO = Path(__file__).resolve().parent.parent
#: seconds any single expected thing may take before the test fails (a deadline, not a sleep)
WAIT = 30.0


class Relay:
    """A TCP relay on 127.0.0.1 to ``upstream``: records what clients send, and ``cut()`` closes
    every connection open now (new ones are relayed again)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.requests: list[bytes] = []
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.open += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        try:
            while data := source.recv(65536):
                if record and data.startswith((b"GET ", b"POST ", b"PATCH ", b"PUT ", b"DELETE ")):
                    with self.lock:  # the start of a request (keep-alive: many per connection)
                        self.requests.append(data)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        with self.lock:
            dropped, self.open = self.open, []
        for s in dropped:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def events_requests(self) -> list[str]:
        with self.lock:
            return [r.decode("latin-1") for r in self.requests if r.startswith(b"GET /api/v1/events")]

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.cut()


class Output:
    """A process's output lines, read by a thread; ``wait_for`` waits on a condition with a deadline."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]  # a text-mode pipe: an iterable of lines
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, *, after: int = 0) -> int:
        """Wait until a line after the first ``after`` lines contains ``text``; its index."""
        deadline = time.monotonic() + WAIT
        while True:
            for n, line in enumerate(self.lines[after:], start=after):
                if text in line:
                    return n
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never appeared in:\n{''.join(self.lines)}"
            try:
                got = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            assert got is not None, f"the process ended before {text!r}:\n{''.join(self.lines)}"
            self.lines.append(got)


@pytest.fixture
def relay(url: str) -> Iterator[Relay]:
    parsed = httpx.URL(url)
    made = Relay((parsed.host, parsed.port or 80))
    yield made
    made.close()


def test_follow_prints_new_lines_resumes_after_a_dropped_connection_and_stops_on_ctrl_c(
    url: str, relay: Relay
) -> None:
    http = httpx.Client(base_url=url, timeout=30)
    note = http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "followed"}}).json()
    other = http.post("/lsm/v1/service_inventory/note", json={"attributes": {"title": "other"}}).json()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSM_")}
    env.update(PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", COLUMNS="200", TZ="Asia/Kolkata")
    command = [sys.executable, "-m", "lsm.cli", "instance", "log", "note", "title=followed", "--follow"]
    process = subprocess.Popen(
        [*command, "--url", relay.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    out, err = Output(process.stdout), Output(process.stderr)
    try:
        # the log as it stands: a table, its time in local time (India: +05:30, no DST) to the ms
        first = out.wait_for("created")
        assert "+05:30" in out.lines[first] and "draft" in "".join(out.lines)
        wait_until(lambda: relay.events_requests(), "the stream was opened")

        http.post(
            f"/lsm/v1/service_inventory/note/{other['id']}/state",
            json={"current_version": 1, "target_state": "published"},
        )  # another instance: not printed
        http.post(
            f"/lsm/v1/service_inventory/note/{note['id']}/state",
            json={"current_version": 1, "target_state": "published", "message": "first change"},
        )
        line = out.lines[out.wait_for("first change")]
        assert "v2" in line and "draft → published" in line and "+05:30" in line

        relay.cut()  # the connection drops; the change below happens while it is away
        err.wait_for("connection lost")
        http.post(
            f"/lsm/v1/service_inventory/note/{note['id']}/state",
            json={"current_version": 2, "target_state": "draft", "message": "while away"},
        )
        err.wait_for("reconnected")
        out.wait_for("while away")
        changed = http.patch(
            f"/lsm/v1/service_inventory/note/{note['id']}",
            json={"current_version": 3, "attributes": {"text": "after the drop"}},
        )
        assert changed.status_code == 200, changed.text
        out.wait_for("  v4  ")

        resumed = relay.events_requests()[-1]
        assert len(relay.events_requests()) >= 2
        assert "last-event-id:" in resumed.lower(), resumed
        printed = "".join(out.lines)
        assert printed.count("first change") == 1 and printed.count("while away") == 1
        assert "other" not in printed
    finally:
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=WAIT)
        finally:
            if process.poll() is None:
                process.kill()
        http.close()
    assert code == 0, "".join(err.lines)
    assert "Traceback" not in "".join(err.lines)


def test_follow_refuses_json(url: str) -> None:
    from typer.testing import CliRunner

    from lsm.cli import app

    result = CliRunner().invoke(app, ["instance", "log", "note", "x=y", "--follow", "--json", "--url", url])
    assert result.exit_code == 2
    assert "--follow" in result.output
