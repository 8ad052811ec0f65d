"""``lsm instance log ENTITY REF --follow``: the event log, then each new line as it happens.

How it follows: the server-sent events of ``GET /api/v1/events`` say *that* the instance
changed (``instance_state`` with its id); the event log says *what* happened, with the message
and compile the stream does not carry. So on each event of this instance the command reads the
log again and prints the lines after those it printed. The log is append-only, so "after the
first n lines" is exact: no line twice, none lost.

Order matters at the start: the stream is opened *before* the log is read, so a change made in
between is both in the log and announced on the stream (printed once, by position). When the
connection drops (a restarted server, a proxy timeout) the command reconnects with
``Last-Event-ID`` (the last event it read, so the server resumes right after it) and reads the
log again, which covers anything that happened while it was away. It waits a little longer
after each failed attempt (up to ``MAX_BACKOFF`` seconds) and never gives up: it runs until
Ctrl-C, which ends it with exit code 0.

Lines go to stdout, flushed one by one, so ``lsm instance log ... --follow | grep failed``
works; notes about the connection go to stderr.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from lsm.cli.render import cell, local_time
from lsm.schemas.events import INSTANCE_STATE

if TYPE_CHECKING:
    from lsm.client import Client

#: seconds to wait before reconnecting: the first retry, and the most between two
FIRST_BACKOFF = 0.2
MAX_BACKOFF = 5.0


def event_line(e: dict[str, Any]) -> str:
    """One event-log line as text: time, version, transfer, trigger, compile, message (all whole)."""
    target = escape(str(e.get("target")))
    if e.get("is_error"):
        target = f"[red]{target} (error)[/]"
    parts = [
        escape(local_time(e.get("created_at"))),
        f"v{e.get('version')}",
        f"{cell(e.get('source')) or '∅'} → {target}",
        escape(str(e.get("trigger"))),
    ]
    if e.get("compile_id"):
        parts.append(f"compile {escape(str(e['compile_id']))}")
    if e.get("message"):
        parts.append(cell(e.get("message")))
    return "  ".join(parts)


class LogFollower:
    """Follows one instance's log; ``show_initial`` prints the log it found first (a table)."""

    def __init__(
        self,
        client: Client,
        entity: str,
        ref: str,
        *,
        out: Console,
        err: Console,
        show_initial: Callable[[list[dict[str, Any]]], None],
    ) -> None:
        self.client = client
        self.entity = entity
        self.ref = ref
        self.out = out
        self.err = err
        self.show_initial = show_initial
        self.printed = 0
        self.last_event_id: str | None = None

    def run(self) -> None:
        """Print the log and follow it until interrupted (``KeyboardInterrupt`` ends it quietly)."""
        import httpx

        instance_id = str(self.client.get_instance(self.entity, self.ref)["id"])
        backoff = FIRST_BACKOFF
        first = True
        try:
            while True:
                try:
                    with self.client.events(last_event_id=self.last_event_id) as stream:
                        if first:
                            log = self.client.instance_log(self.entity, instance_id)
                            self.show_initial(log)
                            self.printed = len(log)
                            first = False
                        else:
                            self.err.print("[dim]reconnected[/]")
                            self.catch_up(instance_id)
                        backoff = FIRST_BACKOFF
                        for event in stream:
                            self.last_event_id = stream.last_event_id
                            if event.event == INSTANCE_STATE and event.data.get("instance_id") == instance_id:
                                self.catch_up(instance_id)
                    reason = "the server ended the stream"
                except (httpx.TransportError, httpx.StreamError) as exc:
                    reason = str(exc) or type(exc).__name__
                self.err.print(f"[dim]connection lost ({escape(reason)}); reconnecting in {backoff:g} s[/]")
                time.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
        except KeyboardInterrupt:
            return

    def catch_up(self, instance_id: str) -> None:
        """Print the log lines after those already printed."""
        log = self.client.instance_log(self.entity, instance_id)
        for line in log[self.printed :]:
            self.out.print(event_line(line), soft_wrap=True)
        self.printed = max(self.printed, len(log))
        sys.stdout.flush()
