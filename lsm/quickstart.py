"""``lsm quickstart``: the engine end to end in one command, with nothing installed beside it.

It starts an embedded server (``lsm.runtime.wiring.build_api`` on a temporary SQLite file, the
real API served by uvicorn on 127.0.0.1 with a free port, a compile worker and a deploy agent in
the same process), loads the ``examples/router_port`` model, orders a router and two ports owned
by it through the ``Client`` (over HTTP, like an operator would), and follows their lifecycles
step by step until they are ``up``: their resources were deployed by the example's handlers,
one configuration file per resource under the server's state directory, which it lists. Then it
deletes one port, follows it to ``terminated`` and shows that its file is gone.

Why through the client and not the engine: the demo is also a smoke test of every layer an
operator touches (HTTP, error bodies, the event log); a failed request makes it exit non-zero.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lsm.api.server import BackgroundServer
from lsm.client import Client, RetryPolicy
from lsm.errors import ConfigurationError, LsmError
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import build_api

EXAMPLE = "router_port"
#: states in which an instance is done moving for the demo's purposes
FINAL_STATES = frozenset({"up", "terminated"})
#: the port the demo deletes
DELETED_PORT = "eth1"
_STYLES = {"info": "cyan", "success": "green", "warning": "yellow", "danger": "red"}


def find_example(name: str = EXAMPLE) -> Path:
    """The example model directory: next to the installed package, or under the current directory."""
    candidates = [
        Path(__file__).resolve().parent.parent / "examples" / name,
        Path.cwd() / "examples" / name,
    ]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise ConfigurationError(
        f"the example model {name!r} was not found (looked in {', '.join(map(str, candidates))}); "
        "run `lsm quickstart` from a checkout of lsm-engine",
        example=name,
    )


@dataclass
class Tracked:
    """One ordered instance the demo follows."""

    entity: str
    name: str
    id: str
    state: str = ""
    version: int = 0
    desired_state_version: int = 0
    seen_events: set[int] = field(default_factory=set)


@dataclass
class Quickstart:
    """The demo against a served API; ``run`` returns the exit code."""

    client: Client
    console: Console
    #: where the embedded agent's handlers write (the example's configuration files)
    state_dir: Path | None = None
    timeout: float = 60.0
    #: seconds without any change after which instances that are not in a final state are settled
    settle: float = 4.0
    poll: float = 0.25
    failures: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)

    def run(self) -> int:
        if self.call("wait for the server", self.client.health) is None:
            return 1
        tracked = self.order()
        if tracked:
            self.follow(tracked, "up")
            self.console.print(self.table(tracked))
            self.desired_state()
            written = self.files("deployed: the files the handlers wrote")
            port = next((item for item in tracked if item.name == f"port {DELETED_PORT}"), None)
            if port is not None and not self.failures:
                self.delete(port, tracked, written)
        if self.failures:
            self.console.print(f"[red]quickstart failed:[/] {len(self.failures)} problem(s)")
            for failure in self.failures:
                self.console.print(f"  - {escape(failure)}")
            return 1
        self.console.print("[green]quickstart finished[/]")
        return 0

    def call(self, what: str, request: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one request; a failure is printed, recorded (exit code) and answered with None."""
        try:
            return request(*args, **kwargs)
        except (LsmError, httpx.HTTPError) as exc:
            self.failures.append(f"{what}: {exc}")
            self.console.print(f"[red]error[/] {escape(what)}: {escape(str(exc))}")
            return None

    def order(self) -> list[Tracked]:
        c = self.client
        self.console.rule("ordering")
        for entry in self.call("read the service catalog", c.catalog) or []:
            for state in (entry.get("lifecycle") or {}).get("states", []):
                self.labels.setdefault(state["name"], state.get("label", "info"))
        router = self.call(
            "create router 10.0.0.1", c.create_instance, "router", {"mgmt_ip": "10.0.0.1", "name": "edge-1"}
        )
        if router is None:
            return []
        tracked = [self.track("router", "router 10.0.0.1", router)]
        for port_name in ("eth0", "eth1"):
            attributes = {"name": port_name, "router": router["id"]}
            port = self.call(f"create port {port_name}", c.create_instance, "port", attributes)
            if port is not None:
                tracked.append(self.track("port", f"port {port_name}", port))
        return tracked

    def track(self, entity: str, name: str, instance: dict[str, Any]) -> Tracked:
        self.console.print(
            f"ordered {escape(name)}: id {instance['id']}, version {instance['version']}, "
            f"state {self.state(instance['state'])}"
        )
        return Tracked(entity, name, instance["id"])

    def follow(self, tracked: list[Tracked], target: str) -> None:
        """Poll instances and event logs, printing each step, until every one is in ``target``
        (or stopped in another final state), or nothing moved for ``settle`` seconds while no
        compile was queued or running, or time ran out; anything but ``target`` is a failure."""
        self.console.rule(f"following the lifecycles to {target}")
        start = last_change = time.monotonic()
        while True:
            steps: list[tuple[dict[str, Any], Tracked]] = []
            changed = False
            for item in tracked:
                changed |= self.refresh(item, steps)
            # one timeline across instances: the order in which the engine wrote the steps
            for event, item in sorted(steps, key=lambda step: (step[0]["created_at"], step[0]["id"])):
                self.print_step(item, event)
            now = time.monotonic()
            if changed:
                last_change = now
            if all(item.state in FINAL_STATES for item in tracked):
                wrong = [f"{i.name} is {i.state}" for i in tracked if i.state != target]
                if wrong:
                    self.failures.append(f"expected {target}: {', '.join(wrong)}")
                return
            if now - last_change >= self.settle and self.compiling():
                last_change = now  # a compile is queued or running: the engine is at work, not stuck
            elif now - last_change >= self.settle:
                waiting = ", ".join(f"{i.name} in {i.state}" for i in tracked if i.state not in FINAL_STATES)
                self.failures.append(f"nothing moved for {self.settle:g} s: {waiting}")
                return
            if now - start >= self.timeout:
                self.failures.append(f"the instances did not settle within {self.timeout:g} s")
                return
            time.sleep(self.poll)

    def compiling(self) -> bool:
        """Whether a compile is queued or running (on a busy machine the first compile, which
        starts the compile processes, can take longer than ``settle`` without a visible step)."""
        for status in ("running", "queued"):
            found = self.call("read the compile queue", self.client.list_compiles, status=status, limit=1)
            if found:
                return True
        return False

    def refresh(self, item: Tracked, steps: list[tuple[dict[str, Any], Tracked]]) -> bool:
        """Read ``item`` and its log; add its new events to ``steps``; whether anything changed."""
        instance = self.call(f"read {item.name}", self.client.get_instance, item.entity, item.id)
        events = self.call(f"read the log of {item.name}", self.client.instance_log, item.entity, item.id)
        new = [event for event in events or [] if event["id"] not in item.seen_events]
        item.seen_events.update(event["id"] for event in new)
        steps.extend((event, item) for event in new)
        changed = bool(new)
        if instance is not None and (instance["state"], instance["version"]) != (item.state, item.version):
            item.state, item.version = instance["state"], instance["version"]
            item.desired_state_version = instance["desired_state_version"]
            changed = True
        return changed

    def print_step(self, item: Tracked, event: dict[str, Any]) -> None:
        mark = "[red]✗[/]" if event.get("is_error") else "→"
        message = f" [dim]{escape(event['message'])}[/]" if event.get("message") else ""
        step = f"{self.state(event.get('source') or '·')} {mark} {self.state(event['target'])}"
        how = f"[dim]({escape(event['trigger'])}, v{event['version']})[/]"
        self.console.print(f"{escape(item.name):<18} {step} {how}{message}")

    def files(self, title: str) -> set[Path]:
        """The files under the state directory (the example's handlers write one per resource)."""
        if self.state_dir is None:
            return set()
        found = {p.relative_to(self.state_dir) for p in self.state_dir.rglob("*") if p.is_file()}
        self.console.rule(title)
        for path in sorted(found):
            self.console.print(f"  {escape(str(path))}")
        if not found:
            self.failures.append(f"no file was written under {self.state_dir}")
        return found

    def delete(self, port: Tracked, tracked: list[Tracked], before: set[Path]) -> None:
        """Delete one port, follow it to ``terminated`` and show that its file is gone."""
        self.console.rule(f"deleting {port.name}")
        done = self.call(
            f"delete {port.name}",
            self.client.delete_instance,
            port.entity,
            port.id,
            current_version=port.version,
        )
        if done is None:
            return
        self.follow([port], "terminated")
        self.console.print(self.table(tracked))
        after = {p for p in before if (self.state_dir / p).exists()} if self.state_dir else set()
        gone = sorted(before - after)
        if not gone:
            self.failures.append(f"no file was removed when {port.name} was deleted")
        for path in gone:
            self.console.print(f"removed: {escape(str(path))}")

    def desired_state(self) -> None:
        """One line on the newest desired-state version, what the compiles produced."""
        versions = self.call("read the desired-state versions", self.client.desired_states, limit=1)
        if versions:
            latest = versions[0]
            self.console.print(
                f"desired state: version {latest.get('version')}, {latest.get('kind')} export, "
                f"{latest.get('resource_count')} resources"
            )

    def state(self, name: str) -> str:
        style = _STYLES.get(self.labels.get(name, "info"), "cyan")
        return f"[{style}]{escape(name)}[/]"

    def table(self, tracked: list[Tracked]) -> Table:
        table = Table(title="service inventory", title_justify="left")
        for column in ("instance", "id", "state", "version", "desired-state version"):
            table.add_column(column, no_wrap=True)
        for item in tracked:
            table.add_row(
                item.name,
                item.id[:8] + "…",  # the full ids are printed when ordered; the table fits 80 columns
                self.state(item.state),
                str(item.version),
                str(item.desired_state_version),
            )
        return table


def run(console: Console | None = None, *, timeout: float = 60.0, settle: float = 4.0) -> int:
    """The whole demo; the exit code (0 when every request succeeded and the instances settled)."""
    console = console or Console()
    model = find_example()
    with tempfile.TemporaryDirectory(prefix="lsm-quickstart-") as tmp:
        database_url = f"sqlite:///{Path(tmp) / 'lsm.db'}"
        state_dir = Path(tmp) / "lsm-state"
        config = ServerConfig(
            database_url=database_url, model=str(model), embedded_agent=True, state_dir=str(state_dir)
        )
        engine = build_api(config)
        engine.start()
        try:
            with BackgroundServer(engine.app) as server:
                console.print(
                    f"lsm quickstart: model [bold]{escape(str(model))}[/], database {escape(database_url)}\n"
                    f"API on {server.url} (OpenAPI at {server.url}/docs)\n"
                    f"the deploy agent writes under {escape(str(state_dir))}"
                )
                retry = RetryPolicy(attempts=20, initial_wait=0.05, max_wait=0.5)
                with Client(server.url, retry=retry) as client:
                    demo = Quickstart(client, console, state_dir, timeout=timeout, settle=settle)
                    return demo.run()
        finally:
            engine.stop()
