"""``lsm deploy``: deploy the newest desired state again, or dry-run it; ``--wait`` follows it
until nothing is pending."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call, connected, print_json
from lsm.cli.compliance import AgentOpt, InstanceOpt, SetOpt, TypeOpt, selection
from lsm.cli.console import err, out
from lsm.cli.options import shared
from lsm.cli.resources import status_cell

if TYPE_CHECKING:
    from lsm.client import Client

#: seconds between looks at the deploy status while ``lsm deploy --wait`` waits
DEPLOY_POLL = 0.5


def _show_dry_run(result: dict[str, Any]) -> None:
    table = render.table(
        f"dry run of version {result.get('version')} (nothing changed)", ("id", "action", "changes", "error")
    )
    for item in result.get("resources") or []:
        changes = "\n".join(
            f"{escape(key)}: {render.cell(c.get('current'))} → {render.cell(c.get('desired'))}"
            for key, c in (item.get("changes") or {}).items()
        )
        action = escape(str(item["action"]))
        style = "red" if item.get("error") else ("dim" if item["action"] == "none" else "")
        table.add_row(
            escape(item["id"]),
            f"[{style}]{action}[/]" if style else action,
            changes,
            render.first_line(item.get("error")),
        )
    out.print(table)
    if result.get("version") is None:
        out.print("[dim]no desired state yet: nothing to deploy[/]")


def _deploy_done(status: dict[str, Any]) -> bool:
    """Nothing pending or deploying, and the planner has planned the newest version."""
    counts = status.get("counts") or {}
    planned = status.get("planned_version")
    version = status.get("version")
    caught_up = version is None or (planned is not None and planned >= version)
    return caught_up and not counts.get("pending") and not counts.get("deploying")


def _follow_deploy(
    client: Client, agents: list[str] | None, *, timeout: float, progress: bool
) -> dict[str, Any]:
    """Poll ``GET /api/v1/deploy`` until nothing is open, at most ``timeout`` seconds; the last status.

    It polls every ``DEPLOY_POLL`` seconds, or less often when one answer takes long (a count
    over a large environment), so that following a deploy never loads the server much.

    On a terminal a progress bar counts the resources that are no longer open; otherwise a
    line per change of the counts goes to stderr.
    """
    import time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    deadline = time.monotonic() + timeout
    started = time.monotonic()
    status = client.deploy_status(agents=agents)
    asked = time.monotonic() - started
    columns = (
        TextColumn("deploy"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
    )
    last = ""
    with Progress(*columns, console=err, transient=True, disable=not progress) as bar:
        task = bar.add_task("", total=None)
        while True:
            counts = status.get("counts") or {}
            total = int(status.get("total") or 0)
            open_ = int(counts.get("pending", 0)) + int(counts.get("deploying", 0))
            line = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            if progress:
                bar.update(task, total=total or None, completed=total - open_, description=line)
            elif line != last:
                err.print(escape(f"deploy: {line or 'no resources'}"))
            last = line
            if _deploy_done(status):
                return status
            if time.monotonic() >= deadline:
                err.print(f"[red]error:[/] the deploy did not finish within {timeout:g} s: {escape(line)}")
                raise typer.Exit(1)
            # a large environment's count takes a while: never spend more than a fifth of the time on it
            pause = max(DEPLOY_POLL, 4 * asked)
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            started = time.monotonic()
            status = client.deploy_status(agents=agents)
            asked = time.monotonic() - started


def deploy(
    ctx: typer.Context,
    agent: AgentOpt = None,
    type_: TypeOpt = None,
    set_: SetOpt = None,
    instance: InstanceOpt = None,
    repair: Annotated[
        bool, typer.Option("--repair", help="Re-deploy every resource, not only failed and skipped ones.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what a deploy would change (handlers read only).")
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Follow the deploy with a progress bar until nothing is pending.")
    ] = False,
    timeout: Annotated[float, typer.Option(help="Bound on --wait and on a dry run (seconds).")] = 600.0,
) -> None:
    """Deploy the newest desired state again (failed and skipped resources), or dry-run it,
    over the selection (--agent, --type, --set, --instance; none: the whole environment).

    Exit code 1 when a dry-run item has an error, or with --wait when resources failed or
    were skipped or the deploy did not finish in time.
    """
    if dry_run and (wait or repair):
        raise typer.BadParameter(
            "--dry-run changes nothing: leave out --wait and --repair", param_hint="--dry-run"
        )
    if timeout <= 0:
        raise typer.BadParameter("must be positive", param_hint="--timeout")
    scope = selection(agent, type_, set_, instance)
    agents = scope["agents"]
    if dry_run:
        result = call(
            ctx,
            lambda c: c.deploy(dry_run=True, timeout=timeout, **scope),
            _show_dry_run,
        )
        if any(item.get("error") for item in result.get("resources") or []):
            raise typer.Exit(1)
        return
    as_json = shared(ctx).json
    with connected(ctx) as client:
        result = client.deploy(repair=repair, **scope)
        if not as_json:
            version = result.get("version")
            of_version = f" (desired-state version {version})" if version is not None else ""
            out.print(f"{result.get('scheduled')} resource(s) scheduled{of_version}")
        if not wait:
            if as_json:
                print_json(result)
            return
        status = _follow_deploy(client, agents, timeout=timeout, progress=err.is_terminal and not as_json)
    if as_json:
        print_json({**result, "status": status})
    else:
        counts = status.get("counts") or {}
        out.print(
            "deployed: "
            + (", ".join(f"{status_cell(k)} {v}" for k, v in sorted(counts.items())) or "no resources")
        )
    counts = status.get("counts") or {}
    if counts.get("failed") or counts.get("skipped"):
        raise typer.Exit(1)
