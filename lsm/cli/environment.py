"""``lsm environment list|create|show|settings|set|halt|resume``: environments, their settings
and the emergency brake.

``halt`` and ``resume`` (with ``lsm agent pause|unpause``, ``lsm.cli.agent``) need the admin
role and may be repeated: halting a halted environment or resuming a running one changes
nothing. Each prints where the brake stands afterwards (``show_brake``; ``show`` prints it too).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out
from lsm.cli.params import parse_value

app = typer.Typer(help="Environments and their settings.", no_args_is_help=True)


@app.command("list")
def environment_list(ctx: typer.Context) -> None:
    """Every environment."""

    def show(envs: list[dict[str, Any]]) -> None:
        table = render.table("environments", ("name", "id", "model", "created"))
        for e in envs:
            table.add_row(
                escape(e["name"]), e["id"], render.cell(e.get("model")), render.cell(e.get("created_at"))
            )
        out.print(table)

    call(ctx, lambda c: c.environments(), show, environment=False)


@app.command("create")
def environment_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The new environment's name.")],
    model: Annotated[str | None, typer.Option("--model", help="Its model; the server's when absent.")] = None,
) -> None:
    """Create an environment."""
    call(
        ctx,
        lambda c: c.create_environment(name, model),
        lambda e: render.print_key_values(out, e, "environment"),
        environment=False,
    )


def _show_settings(settings: dict[str, Any]) -> None:
    table = render.table("settings", ("key", "value", "default", "description"))
    for key, meta in settings.items():
        if isinstance(meta, dict) and "value" in meta:
            table.add_row(
                escape(key),
                render.cell(meta["value"]),
                render.cell(meta.get("default")),
                render.cell(meta.get("description")),
            )
        else:
            table.add_row(escape(key), render.cell(meta), "", "")
    out.print(table)


@app.command("settings")
def environment_settings(ctx: typer.Context) -> None:
    """An environment's settings with their defaults."""
    call(ctx, lambda c: c.settings(), _show_settings)


@app.command("set")
def environment_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Setting key, e.g. partial_compiles.")],
    value: Annotated[str, typer.Argument(help="The value; JSON when it parses (true, 5), else a string.")],
) -> None:
    """Set one setting of an environment."""
    parsed = parse_value(value)
    call(ctx, lambda c: c.set_setting(key, parsed), _show_settings)


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


@app.command("halt")
def environment_halt(ctx: typer.Context) -> None:
    """Halt the environment: orders are still taken and compiles queue, but nothing runs."""
    call(ctx, lambda c: c.halt(), show_brake)


@app.command("resume")
def environment_resume(ctx: typer.Context) -> None:
    """Resume a halted environment: what queued runs, in order."""
    call(ctx, lambda c: c.resume(), show_brake)


@app.command("show")
def environment_show(ctx: typer.Context) -> None:
    """The environment: its model, whether it is halted and its paused agents."""

    def show(env: dict[str, Any]) -> None:
        fields = {k: env[k] for k in ("name", "id", "model", "created_at")}
        render.print_key_values(out, fields, "environment")
        show_brake(env)

    call(ctx, lambda c: c.get_environment(), show)
