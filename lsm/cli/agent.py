"""``lsm agent``: run a deploy agent (the group's own options), or ``pause``/``unpause`` an agent
name of a running server (its commands: the emergency brake, with ``lsm environment halt``).

Why one group for both: the name is the agent's either way. Without a command the group runs
an agent until interrupted (server side, like ``lsm worker``); with one it is a client
command like any other. Pausing a paused agent changes nothing; each prints where the brake
stands afterwards.
"""

from __future__ import annotations

from typing import Annotated

import typer

from lsm.cli.calls import call
from lsm.cli.environment import show_brake
from lsm.cli.errors import errors_reported
from lsm.cli.run import run_until_interrupted

AgentName = Annotated[
    str, typer.Argument(help="The agent name (the agent of a resource id: Type[agent,...]).")
]

app = typer.Typer(
    help="Run a deploy agent until interrupted (the options), or pause and unpause agent names of a "
    "running server (the commands)."
)


@app.callback(invoke_without_command=True)
def agent(
    ctx: typer.Context,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL (LSM_DATABASE_URL); ./lsm.db by default.")
    ] = None,
    names: Annotated[
        list[str] | None,
        typer.Option("--agent", help="An agent name to serve (repeatable; default: every name)."),
    ] = None,
    noop: Annotated[bool, typer.Option("--noop", help="Global noop: only read and report changes.")] = False,
    sema: Annotated[
        int | None, typer.Option("--sema", min=1, help="At most N handlers of this process at once.")
    ] = None,
    threads: Annotated[int, typer.Option(help="Handler threads (resources deployed concurrently).")] = 8,
    config: Annotated[
        str | None, typer.Option("--config", help="Configuration file (./lsm.toml or pyproject.toml).")
    ] = None,
    poll: Annotated[
        float, typer.Option(help="Seconds between looks when nothing woke it (a fallback).")
    ] = 1.0,
    lease_ttl: Annotated[
        float, typer.Option(help="Seconds before a dead agent's names are taken over.")
    ] = 30.0,
) -> None:
    """Run a deploy agent (no API) until interrupted.

    It deploys the newest desired-state version for the agent names it holds. On PostgreSQL,
    more agents on any machine share the names (each name is held by one process; a dead one's
    names are taken over once its lease expired). ``lsm agent pause|unpause NAME`` act on a
    running server instead.
    """
    if ctx.invoked_subcommand is not None:
        return
    from lsm.runtime.config import load_config
    from lsm.runtime.wiring import build_agent

    with errors_reported():
        settings = load_config(config, database_url=database)
        runtime = build_agent(
            settings.model_copy(
                update={
                    "poll_interval": poll,
                    "agent_threads": threads,
                    "lease_ttl": lease_ttl,
                    "agent_names": list(names or []),
                    "agent_noop": noop,
                    "agent_sema": sema,
                    "role": "lsm-agent",
                }
            )
        )
        runtime.start()
    run_until_interrupted(runtime, f"lsm agent on {settings.database_url}")


@app.command("pause")
def agent_pause(
    ctx: typer.Context,
    name: AgentName,
    stay_paused: Annotated[
        bool,
        typer.Option(
            "--stay-paused",
            help="Stay paused when the environment resumes from a halt "
            "(a pause outside a halt always stays).",
        ),
    ] = False,
) -> None:
    """Pause one agent name: its resources wait while the others deploy."""
    call(ctx, lambda c: c.pause_agent(name, stay_paused=stay_paused), show_brake)


@app.command("unpause")
def agent_unpause(ctx: typer.Context, name: AgentName) -> None:
    """Lift an agent name's pause (a halt of the environment still holds it until the resume)."""
    call(ctx, lambda c: c.unpause_agent(name), show_brake)
