"""``lsm``: the command line of lsm-engine (typer + rich), composed of one module per command
group.

Two kinds of commands:

* **server side**: ``server``, ``worker`` and ``quickstart`` (``lsm.cli.run``) and ``agent``
  without a command (``lsm.cli.agent``) run the engine; ``lifecycle show`` reads lifecycle
  files offline.
* **client side**: everything else talks to a running server through ``lsm.client.Client``
  with the options every command shares: ``--url`` (``LSM_URL``), ``--environment``/``-e``
  (``LSM_ENVIRONMENT``), ``--json`` and ``--token`` (``LSM_TOKEN``). They are options of
  ``lsm`` itself and may be written before the command or anywhere after it
  (``lsm.cli.options``).

The plumbing the groups share has modules of its own: the request and its answer
(``calls``), error reporting (``errors``), the consoles and their width (``console``),
tables and times (``render``), arguments several groups take (``params``). None of them, and
no command module, imports this package's ``__init__``: this module only composes the tree.

Errors are printed as ``error: <message>`` in red with their details, exit code 1, never a
traceback for an ``LsmError``; bad command-line input is a usage error (exit 2).

Server-side modules (the engine, FastAPI, uvicorn, lifecycle files) and the client are
imported inside the commands that need them, so that ``lsm --help`` loads neither.

Example::

    lsm server --model examples/router_port &
    lsm instance create router --attr mgmt_ip='"10.0.0.1"' --attr name=edge-1
    lsm instance show router mgmt_ip=10.0.0.1
    lsm lifecycle show simple --dot | dot -Tsvg > simple.svg
"""

from __future__ import annotations

import typer

from lsm.cli import (
    agent,
    audit,
    catalog,
    compiles,
    compliance,
    deploy,
    desired_state,
    discovery,
    environment,
    expert,
    export,
    graph,
    instance,
    lifecycle,
    order,
    resources,
    run,
    selector,
    tokens,
    webhooks,
)
from lsm.cli.options import DEFAULT_URL, SharedOptionsGroup, read_shared_options

__all__ = ["DEFAULT_URL", "app", "main"]

app = typer.Typer(
    name="lsm",
    cls=SharedOptionsGroup,
    help="lsm-engine: service lifecycle engine (Inmanta LSM style).\n\n"
    "--url, --environment, --json, -o, --wide and --token may also be written after the command "
    "(lsm instance list router --url URL).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.callback()(read_shared_options)

# server side (an empty epilog: their help does not point at the shared options, they take none)
app.command("server", epilog="")(run.server)
app.command("worker", epilog="")(run.worker)
app.add_typer(agent.app, name="agent")
app.command("quickstart", epilog="")(run.quickstart)
app.add_typer(lifecycle.app, name="lifecycle")

# the service inventory
app.add_typer(catalog.app, name="catalog")
app.add_typer(instance.app, name="instance")
app.add_typer(expert.app, name="expert")
app.add_typer(order.app, name="order")

# compiles, desired state and deploy
app.command("compile")(compiles.compile_)
app.add_typer(selector.app, name="selector")
app.add_typer(desired_state.app, name="desired-state")
app.command("export")(export.export)
app.add_typer(graph.app, name="graph")
app.add_typer(resources.app, name="resources")
app.command("deploy")(deploy.deploy)
app.command("compliance")(compliance.compliance)
app.command("discovered")(discovery.discovered)
app.command("adopt")(discovery.adopt)

# environments, access and notifications
app.add_typer(environment.app, name="environment")
app.add_typer(tokens.app, name="token")
app.command("audit")(audit.audit_list)
app.add_typer(webhooks.app, name="webhook")


def main() -> None:
    """Entry point of the ``lsm`` console script."""
    app(prog_name="lsm")
