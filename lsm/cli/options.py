"""The options every client command shares, defined once on the root of the command tree.

``--url`` (``LSM_URL``), ``--environment``/``-e`` (``LSM_ENVIRONMENT``), ``--json`` and
``--token`` (``LSM_TOKEN``) are options of ``lsm`` itself: its callback (``read_shared_options``)
keeps them in the context object, a ``SharedOptions``, and every command reads them from its
context (``shared(ctx)``, or ``lsm.cli.calls``) instead of declaring them again.

Why they may still come anywhere on the line: scripts, tests and docs write
``lsm instance list router --url X``, after the command, where click only looks for the
command's own options. ``SharedOptionsGroup`` (the root group) moves every shared option it
finds before a ``--`` to the front of the line before parsing, so both spellings mean the
same. The shared names are therefore reserved: no command may declare an option of its own
named ``--url``, ``--environment``, ``-e``, ``--json`` or ``--token``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

#: the default ``--url``: ``lsm.client.DEFAULT_URL``, repeated so that ``lsm --help`` needs no client
DEFAULT_URL = "http://127.0.0.1:8888"

#: every shared option's spellings, and whether it takes a value
SHARED_OPTIONS: dict[str, bool] = {
    "--url": True,
    "--environment": True,
    "-e": True,
    "--token": True,
    "--json": False,
}


@dataclass(frozen=True)
class SharedOptions:
    """What the root callback read: the server, the environment, the output form, the token."""

    url: str = DEFAULT_URL
    environment: str | None = None
    json: bool = False
    token: str | None = None


def shared(ctx: typer.Context) -> SharedOptions:
    """The shared options of this invocation (the defaults when the root callback did not run)."""
    return ctx.find_object(SharedOptions) or SharedOptions()


def hoist_shared_options(args: list[str]) -> list[str]:
    """``args`` with every shared option (and its value) moved to the front, in order.

    Stops at ``--``; an option that needs a value but ends the line stays where it is, so that
    the command reports it.
    """
    front: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        name = arg.partition("=")[0]
        if arg.startswith("--") and "=" in arg and SHARED_OPTIONS.get(name):
            front.append(arg)  # --url=X
        elif arg.startswith("-e") and not arg.startswith("--") and len(arg) > 2:
            front.append(arg)  # -eNAME
        elif arg in SHARED_OPTIONS and not (SHARED_OPTIONS[arg] and index + 1 == len(args)):
            width = 2 if SHARED_OPTIONS[arg] else 1
            front.extend(args[index : index + width])
            index += width
            continue
        else:
            rest.append(arg)
        index += 1
    return front + rest


#: the last line of every command's help, which no longer lists the shared options itself
SHARED_EPILOG = "Also --url, -e/--environment, --json and --token (lsm --help), before or after the command."


def _mention_shared_options(command: Any) -> None:
    for sub in getattr(command, "commands", {}).values():
        if sub.epilog is None:
            sub.epilog = SHARED_EPILOG
        _mention_shared_options(sub)


class SharedOptionsGroup(TyperGroup):
    """The root group: reads the shared options wherever they are on the line (see above), and
    names them at the foot of every command's help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _mention_shared_options(self)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # ctx is typer's click Context (typer may carry its own click): Any keeps us off its path
        return super().parse_args(ctx, hoist_shared_options(args))


def read_shared_options(
    ctx: typer.Context,
    url: Annotated[
        str, typer.Option("--url", envvar="LSM_URL", help="Base URL of the lsm server.")
    ] = DEFAULT_URL,
    environment: Annotated[
        str | None,
        typer.Option("--environment", "-e", envvar="LSM_ENVIRONMENT", help="Environment name or id."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON answer.")] = False,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="LSM_TOKEN",
            help="API token for a server with authentication on; else LSM_TOKEN, else the token file "
            "(LSM_TOKEN_FILE or ~/.config/lsm/token, mode 0600).",
        ),
    ] = None,
) -> None:
    """lsm-engine: service lifecycle engine (Inmanta LSM style).

    The options above apply to every command that talks to a server and may also be written
    after the command (lsm instance list router --url URL).
    """
    ctx.obj = SharedOptions(url=url, environment=environment, json=as_json, token=token)
