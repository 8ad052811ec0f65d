"""The options every client command shares, defined once on the root of the command tree.

``--url`` (``LSM_URL``), ``--environment``/``-e`` (``LSM_ENVIRONMENT``), ``--json``,
``-o``/``--output`` (``json``, ``yaml`` or ``table``), ``--wide`` and ``--token`` (``LSM_TOKEN``)
are options of ``lsm`` itself: its callback (``read_shared_options``)
keeps them in the context object, a ``SharedOptions``, and every command reads them from its
context (``shared(ctx)``, or ``lsm.cli.calls``) instead of declaring them again.

Why they may still come anywhere on the line: scripts, tests and docs write
``lsm instance list router --url X``, after the command, where click only looks for the
command's own options. ``SharedOptionsGroup`` (the root group) moves every shared option it
finds before a ``--`` to the front of the line before parsing, so both spellings mean the
same. The shared names are therefore reserved: no command may declare an option of its own
named ``--url``, ``--environment``, ``-e``, ``--json``, ``--wide`` or ``--token``. ``-o`` and
``--output`` are moved only when their value is an output form (``json``, ``yaml``, ``table``):
``lsm graph owners -o owners.svg`` keeps its own ``-o``, a file to write.

``--json`` is ``-o json``: both set ``SharedOptions.json`` ("print the answer as data"), which
every command tests; ``lsm.cli.calls.print_json`` then writes JSON or YAML as ``-o`` asked.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
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
    "--wide": False,
}


class OutputForm(StrEnum):
    """What ``-o``/``--output`` may ask for."""

    JSON = "json"
    YAML = "yaml"
    TABLE = "table"


#: the output forms of ``-o``/``--output``
OUTPUT_FORMS = tuple(form.value for form in OutputForm)

#: the spellings of the output option, moved to the front only with an output form as value
OUTPUT_OPTIONS = ("-o", "--output")


@dataclass(frozen=True)
class SharedOptions:
    """What the root callback read: the server, the environment, the output form, the token.

    ``json`` is true for ``--json``, ``-o json`` and ``-o yaml`` (the answer as data); ``output``
    says which form; ``wide`` shows every column and full ids on a terminal.
    """

    url: str = DEFAULT_URL
    environment: str | None = None
    json: bool = False
    token: str | None = None
    output: str = "table"
    wide: bool = False


def shared(ctx: typer.Context) -> SharedOptions:
    """The shared options of this invocation (the defaults when the root callback did not run)."""
    return ctx.find_object(SharedOptions) or SharedOptions()


#: the shared options of the invocation running now, set by the root callback until it ends
_CURRENT: ContextVar[SharedOptions | None] = ContextVar("lsm_shared_options", default=None)


def current() -> SharedOptions:
    """The shared options of the command running now (the defaults outside one): for the
    console and ``print_json``, which are not handed a context."""
    return _CURRENT.get() or SharedOptions()


def wide_requested() -> bool:
    """Whether the running command was asked for ``--wide``."""
    return current().wide


def _output_option(args: list[str], index: int) -> int:
    """How many items at ``index`` are an ``-o``/``--output`` with an output form (0: none)."""
    arg = args[index]
    for spelling in OUTPUT_OPTIONS:
        if arg == spelling:
            return 2 if index + 1 < len(args) and args[index + 1] in OUTPUT_FORMS else 0
        glued = arg.removeprefix(spelling + "=" if spelling.startswith("--") else spelling)
        if glued != arg and glued in OUTPUT_FORMS:
            return 1
    return 0


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
        if width := _output_option(args, index):
            front.extend(args[index : index + width])
            index += width
            continue
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
SHARED_EPILOG = (
    "Also --url, -e/--environment, --json, -o json|yaml|table, --wide and --token (lsm --help), "
    "before or after the command."
)


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
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON answer (-o json).")] = False,
    output: Annotated[
        OutputForm | None,
        typer.Option(
            "--output",
            "-o",
            help="json, yaml (the answer as data) or table (the default; plain lines when piped).",
        ),
    ] = None,
    wide: Annotated[
        bool, typer.Option("--wide", help="Tables on a terminal: every column and full ids.")
    ] = False,
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
    if as_json and output not in (None, OutputForm.JSON):
        raise typer.BadParameter(f"--json is -o json, not -o {output.value}", param_hint="--json")
    form = OutputForm.JSON if as_json else output or OutputForm.TABLE
    ctx.obj = SharedOptions(
        url=url,
        environment=environment,
        json=form is not OutputForm.TABLE,
        token=token,
        output=form.value,
        wide=wide,
    )
    _CURRENT.set(ctx.obj)
    ctx.call_on_close(lambda: _CURRENT.set(None))
