"""``--wait``: follow instances until each reached its target state, for CI jobs.

The contract (docs/api.md): exit 0 when every item reached its target state (``up``,
``terminated``, or the state it names), 1 when one failed (its diagnosis printed), 3 when the
``--timeout`` passed first; usage errors are typer's 2.

How it follows: the server-sent events of ``GET /api/v1/events`` say *that* an instance changed
(``instance_state`` with its id); a ``check`` (the order, or the instance, read again) says
where things stand. The stream is opened before the first check, so a change made in between
is both seen by the check and announced; it is read in a thread of its own, with a client of
its own, so that the time-out holds even while the stream is silent. A check also runs every
``POLL_S`` seconds without an event (a dropped connection is reopened meanwhile). Progress goes
to stderr (a rich progress bar when stderr is a terminal), the answer to stdout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from lsm.cli.console import err
from lsm.cli.options import shared
from lsm.schemas.events import INSTANCE_STATE

if TYPE_CHECKING:
    from lsm.client import Client

EXIT_DONE = 0
EXIT_FAILED = 1
EXIT_TIMEOUT = 3
#: seconds between two checks when no event came (the safety net of a missed event)
POLL_S = 2.0


@dataclass(frozen=True)
class Standing:
    """Where the followed items stand: how many reached their target, of how many, and the
    failed ones (``name: diagnosis``)."""

    done: int
    total: int
    failed: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return bool(self.failed) or self.done == self.total


def follow(
    open_client: Callable[[], Client],
    ids: set[str],
    check: Callable[[], Standing],
    *,
    timeout: float,
    what: str,
) -> tuple[int, Standing]:
    """Check until finished or ``timeout`` seconds passed; the exit code and the last standing.
    ``open_client`` gives the stream its own client (closed here)."""
    changed = threading.Event()
    opened = threading.Event()
    stop = threading.Event()
    listener = threading.Thread(
        target=_listen, args=(open_client, ids, changed, opened, stop), name="lsm-wait-events", daemon=True
    )
    listener.start()
    opened.wait(timeout=min(timeout, 10.0))
    deadline = time.monotonic() + timeout
    try:
        with _Display(what) as show:
            while True:
                standing = check()
                show(standing)
                if standing.finished:
                    return (EXIT_FAILED if standing.failed else EXIT_DONE), standing
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return EXIT_TIMEOUT, standing
                changed.wait(timeout=min(remaining, POLL_S))
                changed.clear()
    finally:
        stop.set()


def _listen(
    open_client: Callable[[], Client],
    ids: set[str],
    changed: threading.Event,
    opened: threading.Event,
    stop: threading.Event,
) -> None:
    """Set ``changed`` on every ``instance_state`` event of ``ids``, reconnecting after a drop."""
    last: str | None = None
    client = open_client()
    try:
        while not stop.is_set():
            try:
                with client.events(last_event_id=last) as stream:
                    opened.set()
                    for event in stream:
                        last = stream.last_event_id
                        if stop.is_set():
                            return
                        if event.event == INSTANCE_STATE and event.data.get("instance_id") in ids:
                            changed.set()
            except Exception:  # the stream is a hint: the checks decide; reconnect after a pause
                opened.set()
                changed.set()
                stop.wait(0.5)
    finally:
        client.close()


class _Display:
    """A rich progress bar on a terminal's stderr, or a line per change off one."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.last: tuple[int, int] | None = None

    def __enter__(self) -> Callable[[Standing], None]:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress: Progress | None = None
        if err.is_terminal:
            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=False,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.what, total=None)
        return self.show

    def show(self, standing: Standing) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=standing.done, total=standing.total)
            return
        now = (standing.done, standing.total)
        if now != self.last:
            err.print(f"{self.what}: {standing.done}/{standing.total} reached their target state")
            self.last = now

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()


def stream_client(ctx: typer.Context) -> Client:
    """A client of its own for the event stream (another thread reads it)."""
    from lsm.client import Client

    options = shared(ctx)
    return Client(options.url, options.environment, token=options.token)


def report(standing: Standing, code: int, timeout: float) -> None:
    """What a wait ended with, on stderr: the failed items' diagnoses, or the time-out."""
    for line in standing.failed:
        err.print(f"[red]failed[/] {escape(line)}", soft_wrap=True)
    if code == EXIT_TIMEOUT:
        err.print(
            f"[yellow]timed out[/] after {timeout:g} s: "
            f"{standing.done} of {standing.total} reached their target state"
        )
