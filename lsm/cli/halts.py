"""``lsm environment halt|resume`` and ``lsm agent pause|unpause NAME``: the emergency brake.

All four need the admin role and may be repeated: halting a halted environment, pausing a
paused agent, resuming a running environment change nothing. Each prints where the brake
stands afterwards (``lsm environment show`` prints it too).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import DEFAULT_URL, AsJson, Environment, Url, agent_app, call, environment_app, out, render

AgentName = Annotated[
    str, typer.Argument(help="The agent name (the agent of a resource id: Type[agent,...]).")
]


def show_brake(env: dict[str, Any]) -> None:
    """Whether the environment is halted, and its paused agents."""
    name = escape(env["name"])
    if env.get("halted"):
        by = f" by {escape(env['halted_by'])}" if env.get("halted_by") else ""
        out.print(
            f"environment {name} is [bold red]halted[/] since {render.cell(env['halted_at'])}{by}: "
            "orders queue, no compile runs and no agent deploys (lsm environment resume)"
        )
    else:
        out.print(f"environment {name} runs")
    paused = env.get("paused_agents") or []
    if paused:
        table = render.table("paused agents", ("agent", "since", "by", "when the environment resumes"))
        for p in paused:
            table.add_row(
                escape(p["agent"]),
                render.cell(p["paused_at"]),
                render.cell(p["paused_by"]),
                "stays paused" if p["stay_paused"] else "unpaused",
            )
        out.print(table)


@environment_app.command("halt")
def environment_halt(
    url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False
) -> None:
    """Halt the environment: orders are still taken and compiles queue, but nothing runs."""
    call(url, environment, as_json, lambda c: c.halt(), show_brake)


@environment_app.command("resume")
def environment_resume(
    url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False
) -> None:
    """Resume a halted environment: what queued runs, in order."""
    call(url, environment, as_json, lambda c: c.resume(), show_brake)


@environment_app.command("show")
def environment_show(
    url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False
) -> None:
    """The environment: its model, whether it is halted and its paused agents."""

    def show(env: dict[str, Any]) -> None:
        fields = {k: env[k] for k in ("name", "id", "model", "created_at")}
        render.print_key_values(out, fields, "environment")
        show_brake(env)

    call(url, environment, as_json, lambda c: c.get_environment(), show)


@agent_app.command("pause")
def agent_pause(
    name: AgentName,
    stay_paused: Annotated[
        bool,
        typer.Option(
            "--stay-paused",
            help="Stay paused when the environment resumes from a halt "
            "(a pause outside a halt always stays).",
        ),
    ] = False,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Pause one agent name: its resources wait while the others deploy."""
    call(url, environment, as_json, lambda c: c.pause_agent(name, stay_paused=stay_paused), show_brake)


@agent_app.command("unpause")
def agent_unpause(
    name: AgentName, url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False
) -> None:
    """Lift an agent name's pause (a halt of the environment still holds it until the resume)."""
    call(url, environment, as_json, lambda c: c.unpause_agent(name), show_brake)
