"""``lsm``: the command line of lsm-engine (typer + rich).

Two kinds of commands:

* **server side**: ``server`` runs the engine and its API; ``quickstart`` runs a demo end to
  end; ``worker`` and ``agent`` run a compile worker and a deploy agent; ``lifecycle show``
  reads lifecycle files offline.
* **client side**: everything else talks to a running server through ``lsm.client.Client``;
  each takes ``--url`` (``LSM_URL``), ``--environment`` (``LSM_ENVIRONMENT``) and ``--json``.

Errors are printed as ``error: <message>`` in red with their details, exit code 1, never a
traceback for an ``LsmError``; bad command-line input is a usage error (exit 2).

Server-side modules (the engine, FastAPI, uvicorn, lifecycle files) are imported inside the
commands that need them, so that client commands start fast and need only ``lsm.client``.

Example::

    lsm server --model examples/router_port &
    lsm instance create router --attr mgmt_ip='"10.0.0.1"' --attr name=edge-1
    lsm instance show router mgmt_ip=10.0.0.1
    lsm lifecycle show simple --dot | dot -Tsvg > simple.svg
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from lsm.cli import render
from lsm.errors import LsmError
from lsm.gc_pause import freeze_startup_heap

if TYPE_CHECKING:
    from rich.table import Table

    from lsm.client import Client

#: the default ``--url``: ``lsm.client.DEFAULT_URL``, repeated so that ``lsm --help`` needs no client
DEFAULT_URL = "http://127.0.0.1:8888"

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

app = typer.Typer(
    name="lsm",
    help="lsm-engine: service lifecycle engine (Inmanta LSM style).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
catalog_app = typer.Typer(
    help="The service catalog: entities of the environment's model.", no_args_is_help=True
)
instance_app = typer.Typer(help="Service instances: order, change, inspect.", no_args_is_help=True)
environment_app = typer.Typer(help="Environments and their settings.", no_args_is_help=True)
lifecycle_app = typer.Typer(help="Lifecycles (read offline from the lifecycle files).", no_args_is_help=True)
selector_app = typer.Typer(help="Selectors of partial compiles.", no_args_is_help=True)
resources_app = typer.Typer(help="Resources of the newest desired state and their deploy.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(instance_app, name="instance")
app.add_typer(environment_app, name="environment")
app.add_typer(lifecycle_app, name="lifecycle")
app.add_typer(selector_app, name="selector")
app.add_typer(resources_app, name="resources")
token_app = typer.Typer(help="API tokens (admins): create, list, revoke.", no_args_is_help=True)
app.add_typer(token_app, name="token")

#: the ``--token`` given before the command (``lsm --token ... instance list``); see ``main_options``
_options: dict[str, str | None] = {"token": None}


@app.callback()
def main_options(
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
    """lsm-engine: service lifecycle engine (Inmanta LSM style)."""
    _options["token"] = token


# -- options shared by every client command ------------------------------------------------------
Url = Annotated[str, typer.Option("--url", envvar="LSM_URL", help="Base URL of the lsm server.")]
Environment = Annotated[
    str | None,
    typer.Option("--environment", "-e", envvar="LSM_ENVIRONMENT", help="Environment name or id."),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the raw JSON answer.")]
Attr = Annotated[
    list[str] | None,
    typer.Option(
        "--attr", "-a", help="key=value, repeatable; the value is JSON when it parses, else a string."
    ),
]
AttributesJson = Annotated[str | None, typer.Option("--attributes", help="All attributes as a JSON object.")]
CurrentVersion = Annotated[
    int, typer.Option("--current-version", "-v", help="The instance version this change is based on.")
]


# -- plumbing ----------------------------------------------------------------------------------------
def fail(exc: LsmError) -> typer.Exit:
    """Print an engine error (message, then details) and give the exit to raise."""
    err.print(f"[red]error:[/] {escape(exc.message)}")
    for key, value in exc.details.items():
        if key == "items" and isinstance(value, list):  # a bulk request: every refused item
            for item in value:
                if isinstance(item, dict):
                    named = f" ({item['id']})" if item.get("id") else ""
                    where = f"{item.get('op')}[{item.get('index')}]{named}"
                    err.print(f"  - {escape(where)}: {escape(str(item.get('message', '')))}")
        elif key == "errors" and isinstance(value, list):
            for item in value:
                if isinstance(item, dict) and "path" in item:
                    err.print(f"  - {escape(str(item['path']))}: {escape(str(item.get('reason', '')))}")
                else:
                    err.print(f"  - {escape(render.compact(item))}")
        else:
            err.print(f"  {escape(key)}: {escape(render.compact(value))}")
    return typer.Exit(1)


@contextmanager
def errors_reported(url: str | None = None) -> Iterator[None]:
    """Turn ``LsmError`` and transport failures into ``error: ...`` and exit code 1."""
    import httpx

    try:
        yield
    except LsmError as exc:
        raise fail(exc) from None
    except httpx.TransportError as exc:
        where = f" at {url}" if url else ""
        reason = str(exc) or type(exc).__name__
        err.print(f"[red]error:[/] cannot reach the lsm server{escape(where)}: {escape(reason)}")
        raise typer.Exit(1) from None


def call(
    url: str,
    environment: str | None,
    as_json: bool,
    request: Callable[[Client], Any],
    show: Callable[[Any], None],
) -> Any:
    """Run one client request and print its answer (raw JSON with ``--json``, else ``show``); the answer."""
    from lsm.client import Client

    with errors_reported(url), Client(url, environment, token=_options["token"]) as client:
        result = request(client)
    if as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
    else:
        show(result)
    return result


def parse_attributes(attrs: list[str] | None, attributes: str | None) -> dict[str, Any]:
    """``--attributes '{json}'`` first, then each ``--attr key=value`` over it."""
    result: dict[str, Any] = {}
    if attributes:
        try:
            parsed = json.loads(attributes)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--attributes") from None
        if not isinstance(parsed, dict):
            raise typer.BadParameter("must be a JSON object", param_hint="--attributes")
        result.update(parsed)
    for item in attrs or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected key=value, got {item!r}", param_hint="--attr")
        try:
            result[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            result[key.strip()] = raw
    return result


def _print_kv(data: dict[str, Any], title: str | None = None) -> None:
    render.print_key_values(out, data, title)


# -- server side ----------------------------------------------------------------------------------------
@app.command()
def server(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="Model path or module (LSM_MODEL); repeatable, as name=path: the first runs the "
            "default environment, every one may be chosen by name for a new environment.",
        ),
    ] = None,
    model_dir: Annotated[
        list[str] | None,
        typer.Option("--model-dir", help="Directory under which an admin may name a model by path."),
    ] = None,
    auth: Annotated[
        bool, typer.Option("--auth", help="Require a token on every request but /health (LSM_AUTH=1).")
    ] = False,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="Listen on a non-loopback address without authentication."),
    ] = False,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL (LSM_DATABASE_URL); ./lsm.db by default.")
    ] = None,
    host: Annotated[str | None, typer.Option("--host", help="Address to listen on (127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port to listen on (8888).")] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Configuration file (./lsm.toml or pyproject.toml).")
    ] = None,
    agent: Annotated[
        bool, typer.Option("--agent/--no-agent", help="Run a deploy agent in the server (default).")
    ] = True,
    worker: Annotated[
        bool,
        typer.Option(
            "--worker/--no-worker",
            help="Run compiles (and the agent) in the server (default); --no-worker: only the API, "
            "with `lsm worker` (and `lsm agent`) in processes of their own.",
        ),
    ] = True,
    access_log: Annotated[
        bool | None,
        typer.Option(
            "--access-log/--no-access-log",
            help="Log a line per HTTP request (default; or LSM_ACCESS_LOG=0, access_log = false).",
        ),
    ] = None,
) -> None:
    """Run the API with its embedded compile worker and deploy agent until interrupted."""
    import uvicorn

    from lsm.api.slow_clients import http_options
    from lsm.model.policy import parse_model_option
    from lsm.runtime.config import check_listen, load_config
    from lsm.runtime.wiring import build_api

    with errors_reported():
        named = dict(parse_model_option(m) for m in model or [])
        first = parse_model_option(model[0])[1] if model else None
        settings = load_config(
            config,
            database_url=database,
            model=first,
            host=host,
            port=port,
            models=named or None,
            model_dirs=model_dir or None,
            insecure=insecure or None,
            auth_enabled=auth,
            access_log=access_log,
        )
        check_listen(settings)
        runtime = build_api(settings.model_copy(update={"embedded_agent": agent, "embedded_worker": worker}))
        runtime.start()
    freeze_startup_heap()
    try:
        state = "on" if settings.auth.enabled else "OFF (every caller may do everything)"
        err.print(
            f"lsm server on http://{settings.host}:{settings.port} (database {settings.database_url}); "
            f"authentication {state}"
        )
        uvicorn.run(
            runtime.app,
            host=settings.host,
            port=settings.port,
            log_level="info",
            access_log=settings.access_log,
            **http_options(header_timeout=settings.header_timeout, keep_alive=settings.keep_alive_timeout),
        )
    finally:
        runtime.stop()


def _dump_threads_on_sigusr1() -> None:
    """``kill -USR1 <pid>`` prints every thread's stack to stderr: why is a worker stuck."""
    import faulthandler
    import signal

    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


@app.command()
def worker(
    model: Annotated[str | None, typer.Option("--model", help="Model path or module (LSM_MODEL).")] = None,
    database: Annotated[
        str | None, typer.Option("--database", help="Database URL (LSM_DATABASE_URL); ./lsm.db by default.")
    ] = None,
    config: Annotated[
        str | None, typer.Option("--config", help="Configuration file (./lsm.toml or pyproject.toml).")
    ] = None,
    poll: Annotated[
        float, typer.Option(help="Seconds between looks at the queue when nothing woke it (a fallback).")
    ] = 1.0,
    threads: Annotated[
        int, typer.Option(help="Compile runner threads (one environment gets all but one of them).")
    ] = 4,
    lease_ttl: Annotated[
        float, typer.Option(help="Seconds before a dead worker's compiles are taken over.")
    ] = 30.0,
) -> None:
    """Run a compile worker (no API) until interrupted.

    On PostgreSQL, more workers on any machine share the work (validations in parallel,
    exporting compiles one at a time per environment). On SQLite one worker process runs
    (``lsm server`` includes one); a second refuses to start.
    """

    from lsm.runtime.config import load_config
    from lsm.runtime.wiring import build_worker

    with errors_reported():
        settings = load_config(config, database_url=database, model=model)
        runtime = build_worker(
            settings.model_copy(
                update={
                    "poll_interval": poll,
                    "worker_threads": threads,
                    "lease_ttl": lease_ttl,
                    "role": "lsm-worker",
                }
            )
        )
        runtime.start()
    _run_until_interrupted(runtime, f"lsm worker on {settings.database_url}")


def _run_until_interrupted(runtime: Any, banner: str) -> None:
    """A started background process (worker, agent): dump threads on SIGUSR1, wait for Ctrl-C, stop."""
    import threading

    _dump_threads_on_sigusr1()
    freeze_startup_heap()
    err.print(f"{banner}; Ctrl-C to stop")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        runtime.stop()


#: ``lsm agent`` runs a deploy agent; its subcommands (``pause``, ``unpause``: lsm.cli.halts) act on
#: the agent names of a running server
agent_app = typer.Typer(
    help="Run a deploy agent until interrupted (the options), or pause and unpause agent names of a "
    "running server (the commands)."
)
app.add_typer(agent_app, name="agent")


@agent_app.callback(invoke_without_command=True)
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
    _run_until_interrupted(runtime, f"lsm agent on {settings.database_url}")


@app.command()
def quickstart(
    timeout: Annotated[float, typer.Option(help="Overall bound on following the lifecycles (s).")] = 60.0,
) -> None:
    """Start an embedded server, order a router and two ports, follow their lifecycles."""
    from lsm import quickstart as demo

    with errors_reported():
        code = demo.run(out, timeout=timeout)
    raise typer.Exit(code)


@lifecycle_app.command("show")
def lifecycle_show(
    name: Annotated[str, typer.Argument(help="Lifecycle name, e.g. simple.")],
    dot: Annotated[bool, typer.Option("--dot", help="Print Graphviz DOT instead of tables.")] = False,
    lifecycle_dir: Annotated[
        list[str] | None,
        typer.Option("--lifecycle-dir", help="Extra folder (or file) of lifecycles; repeatable."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """States and transfers of a lifecycle, as tables or DOT; no server needed."""
    from lsm.lifecycle.loading import LifecycleRegistry
    from lsm.lifecycle.render import render_dot, render_table

    with errors_reported():
        spec = LifecycleRegistry.discover(lifecycle_dir or []).get(name)
    if as_json:
        typer.echo(json.dumps(spec.model_dump(mode="json"), indent=2))
    elif dot:
        typer.echo(render_dot(spec), nl=False)
    else:
        out.print(render_table(spec))


# -- catalog ---------------------------------------------------------------------------------------------
@catalog_app.command("list")
def catalog_list(url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False) -> None:
    """Every service entity with its lifecycle, identity, owner and instance counts."""

    def show(entities: list[dict[str, Any]]) -> None:
        table = render.table(
            "service catalog", ("entity", "lifecycle", "identity", "owner", "attributes", "instances")
        )
        for entity in entities:
            lifecycle = entity.get("lifecycle")
            summary = entity.get("instance_summary") or {}
            table.add_row(
                escape(entity["name"]),
                escape(lifecycle.get("name", "") if isinstance(lifecycle, dict) else str(lifecycle or "")),
                render.cell(entity.get("identity")),
                render.cell(entity.get("owner")),
                escape(", ".join(a["name"] for a in entity.get("attributes", []))),
                escape(", ".join(f"{k}: {v}" for k, v in summary.items()))
                if isinstance(summary, dict)
                else "",
            )
        out.print(table)

    call(url, environment, as_json, lambda c: c.catalog(), show)


@catalog_app.command("show")
def catalog_show(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    schema: Annotated[bool, typer.Option("--schema", help="Print the entity's JSON schema.")] = False,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """One entity: its attributes (type, modifier, default) and relations."""

    def show(data: dict[str, Any]) -> None:
        if schema:
            typer.echo(json.dumps(data, indent=2))
            return
        lifecycle = data.get("lifecycle")
        header = {k: v for k, v in data.items() if k not in ("attributes", "relations", "lifecycle")}
        header["lifecycle"] = lifecycle.get("name") if isinstance(lifecycle, dict) else lifecycle
        _print_kv(header, title=f"entity {data.get('name', entity)}")
        table = render.table(
            "attributes", ("name", "type", "modifier", "required", "default", "relation", "description")
        )
        for a in data.get("attributes", []):
            table.add_row(
                escape(a["name"]),
                render.cell(a.get("type")),
                render.cell(a.get("modifier")),
                "yes" if a.get("required") else "",
                "" if a.get("required") else render.cell(a.get("default")),
                render.cell((a.get("relation") or {}).get("target")),
                render.cell(a.get("description")),
            )
        out.print(table)

    def request(client: Client) -> dict[str, Any]:
        return client.schema(entity) if schema else client.entity(entity)

    call(url, environment, as_json, request, show)


# -- instances -------------------------------------------------------------------------------------------
def _instances_table(instances: list[dict[str, Any]], title: str) -> Table:
    table = render.table(title, ("id", "state", "version", "owner", "attributes"))
    for i in instances:
        attributes = i.get("active_attributes") or i.get("candidate_attributes") or {}
        state = escape(i["state"]) + (" [dim](deleted)[/]" if i.get("deleted") else "")
        table.add_row(i["id"], state, str(i["version"]), render.cell(i.get("owner")), render.cell(attributes))
    return table


def _show_instance(instance: dict[str, Any]) -> None:
    head = {
        k: instance.get(k)
        for k in ("id", "service_entity", "state", "version", "desired_state_version", "owner", "deleted")
    }
    head.update(created_at=instance.get("created_at"), last_updated=instance.get("last_updated"))
    if instance.get("deployment_progress"):
        head["deploy"] = _progress_line(instance["deployment_progress"])
    _print_kv(head, title=f"{instance.get('service_entity')} instance")
    table = render.table("attributes", ("attribute", "candidate", "active", "rollback"))
    sets = [instance.get(f"{s}_attributes") or {} for s in ("candidate", "active", "rollback")]
    for key in sorted({k for s in sets for k in s}):
        table.add_row(escape(key), *(render.cell(s[key]) if key in s else "" for s in sets))
    out.print(table)


@instance_app.command("create")
def instance_create(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    attr: Attr = None,
    attributes: AttributesJson = None,
    instance_id: Annotated[str | None, typer.Option("--id", help="Choose the instance id (a UUID).")] = None,
    initial_state: Annotated[
        str | None, typer.Option("--initial-state", help="An alternative initial state.")
    ] = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Order a new instance (version 1, in the lifecycle's initial state)."""
    values = parse_attributes(attr, attributes)
    call(
        url,
        environment,
        as_json,
        lambda c: c.create_instance(entity, values, instance_id=instance_id, initial_state=initial_state),
        _show_instance,
    )


@instance_app.command("bulk")
def instance_bulk(
    file: Annotated[
        str, typer.Argument(help="JSON or YAML file: {entity?, create: [...], update: [...]}; - for stdin.")
    ],
    entity: Annotated[
        str | None, typer.Option("--entity", help="Entity (API name); else the file's `entity`.")
    ] = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Create and update many instances in one transaction: all of them, or none.

    create items are {attributes, service_instance_id?}; update items are {id, current_version,
    attributes}, id being an instance id or <identity_attr>=<value>. On a refusal every
    refused item is listed and nothing is written.
    """
    data = _read_bulk_file(file)
    name = entity or data.get("entity")
    if not isinstance(name, str) or not name:
        raise typer.BadParameter(
            "name the entity with --entity or an `entity` key in the file", param_hint="--entity"
        )
    create, update = data.get("create") or [], data.get("update") or []
    if not isinstance(create, list) or not isinstance(update, list):
        raise typer.BadParameter("`create` and `update` must be lists", param_hint="FILE")

    def show(result: dict[str, Any]) -> None:
        for title, key in (("created", "created"), ("updated", "updated")):
            if result.get(key):
                out.print(_instances_table(result[key], f"{name} instances {title}"))
        out.print(f"{len(result.get('created', []))} created, {len(result.get('updated', []))} updated")

    call(url, environment, as_json, lambda c: c.bulk(name, create=create, update=update), show)


def _read_bulk_file(file: str) -> dict[str, Any]:
    """The bulk request of a JSON or YAML file (YAML is a superset of JSON: one parser reads both)."""
    import sys
    from pathlib import Path

    import yaml

    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except OSError as exc:
        raise typer.BadParameter(f"can not read {file}: {exc.strerror or exc}", param_hint="FILE") from None
    except yaml.YAMLError as exc:
        raise typer.BadParameter(f"{file} is neither JSON nor YAML: {exc}", param_hint="FILE") from None
    if not isinstance(data, dict):
        raise typer.BadParameter(
            f"{file} must hold an object with `create` and/or `update`", param_hint="FILE"
        )
    return data


@instance_app.command("list")
def instance_list(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    state: Annotated[
        list[str] | None, typer.Option("--state", "-s", help="Only this state; repeatable.")
    ] = None,
    include_deleted: Annotated[
        bool, typer.Option("--include-deleted", help="Show deleted instances too.")
    ] = False,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many.")] = 0,
    sort: Annotated[str, typer.Option(help="Sort key, e.g. created_at or state.")] = "created_at",
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """The entity's instances."""
    call(
        url,
        environment,
        as_json,
        lambda c: c.list_instances(
            entity, states=state, include_deleted=include_deleted, limit=limit, offset=offset, sort=sort
        ),
        lambda instances: out.print(_instances_table(instances, f"{entity} instances")),
    )


Ref = Annotated[str, typer.Argument(help="Instance id, or <identity_attr>=<value>.")]


@instance_app.command("show")
def instance_show(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    ref: Ref,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """One instance with its three attribute sets."""
    call(url, environment, as_json, lambda c: c.get_instance(entity, ref), _show_instance)


@instance_app.command("update")
def instance_update(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    ref: Ref,
    current_version: CurrentVersion,
    attr: Attr = None,
    attributes: AttributesJson = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Change attributes (merged into the candidate set; fires the state's on_update transfer)."""
    values = parse_attributes(attr, attributes)
    if not values:
        raise typer.BadParameter("give --attr key=value or --attributes '{...}'", param_hint="--attr")
    call(
        url,
        environment,
        as_json,
        lambda c: c.update_instance(entity, ref, current_version=current_version, attributes=values),
        _show_instance,
    )


@instance_app.command("set-state")
def instance_set_state(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    ref: Ref,
    target_state: Annotated[str, typer.Argument(help="The state to go to (an api_set_state transfer).")],
    current_version: CurrentVersion,
    message: Annotated[str | None, typer.Option("--message", "-m", help="Recorded in the event log.")] = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Move an instance to another state through its api_set_state transfer."""
    call(
        url,
        environment,
        as_json,
        lambda c: c.set_state(
            entity, ref, current_version=current_version, target_state=target_state, message=message
        ),
        _show_instance,
    )


@instance_app.command("delete")
def instance_delete(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    ref: Ref,
    current_version: CurrentVersion,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Delete an instance (fires the state's on_delete transfer)."""
    call(
        url,
        environment,
        as_json,
        lambda c: c.delete_instance(entity, ref, current_version=current_version),
        _show_instance,
    )


@instance_app.command("log")
def instance_log(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    ref: Ref,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Then print each new line as it happens, until Ctrl-C (not with --json)."
        ),
    ] = False,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """The instance's event log, oldest first (times in local time; ``--json``: UTC, as the API)."""

    def show(events: list[dict[str, Any]]) -> None:
        table = render.table(
            "event log", ("version", "time", "source", "target", "trigger", "compile", "message")
        )
        for e in events:
            target = (
                ("[red]" + escape(e["target"]) + " (error)[/]") if e.get("is_error") else escape(e["target"])
            )
            table.add_row(
                str(e["version"]),
                render.cell(e.get("created_at")),
                render.cell(e.get("source")),
                target,
                escape(e["trigger"]),
                render.cell(e.get("compile_id")),
                render.cell(e.get("message")),
            )
        out.print(table)

    if not follow:
        call(url, environment, as_json, lambda c: c.instance_log(entity, ref), show)
        return
    if as_json:
        raise typer.BadParameter(
            "--follow prints lines for a person; use --json without it", param_hint="--json"
        )
    from lsm.cli.follow import LogFollower
    from lsm.client import Client

    with errors_reported(url), Client(url, environment, token=_options["token"]) as client:
        LogFollower(client, entity, ref, out=out, err=err, show_initial=show).run()


@instance_app.command("diagnose")
def instance_diagnose(
    entity: Annotated[str, typer.Argument(help="Entity (API name).")],
    ref: Ref,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Why an instance is where it is: failing validation, failed resources, pending compile."""
    call(url, environment, as_json, lambda c: c.diagnose(entity, ref), _show_diagnosis)


def _compile_line(report: dict[str, Any] | None) -> str | None:
    if not report:
        return None
    line = f"{report.get('kind')} compile {report.get('id')}: {report.get('status')}"
    error = (report.get("report") or {}).get("error")
    return line + (f" ({render.compact(error)})" if error else "")


def _show_diagnosis(data: dict[str, Any]) -> None:
    """The causal chain, one link per line and indented by depth, then the facts as short lines;
    ``--json`` has everything."""
    _print_chain(data)
    instance = data.get("instance") or {}
    allowed = ", ".join(f"{a.get('trigger')} -> {a.get('target')}" for a in data.get("allowed") or [])
    last_error = data.get("last_error")
    summary: dict[str, Any] = {
        "instance": f"{instance.get('service_entity')} {instance.get('id')} v{instance.get('version')}",
        "state": data.get("state"),
        "allowed": allowed or "nothing (a final state)",
        "last error": last_error
        and f"{last_error.get('source')} -> {last_error.get('target')}: {last_error.get('message')}",
        "validation": _compile_line(data.get("validation_compile")),
        "pending": _compile_line(data.get("pending_compile")),
    }
    progress = data.get("deployment_progress")
    if progress and progress.get("total"):
        summary["deploy"] = _progress_line(progress)
    resources = data.get("resources") or []
    summary["failed resources"] = "; ".join(_resource_problem(r) for r in resources) or None
    _print_kv(summary, title="diagnosis")


def _print_chain(data: dict[str, Any]) -> None:
    """``router r1 is in `creating```, then ``└─ because <cause>`` per link, each one deeper."""
    chain = data.get("cause") or []
    summary = str(data.get("summary") or "")
    if not chain:
        if summary:
            out.print(escape(summary))
        return
    if chain[0].get("kind") == "none":
        out.print(f"[bold]{escape(summary)}[/]")
        return
    tail = " because " + " because ".join(str(link.get("message")) for link in chain)
    head = summary.removesuffix(tail) if summary.endswith(tail) else summary
    out.print(f"[bold]{escape(head)}[/]")
    for depth, link in enumerate(chain):
        kind = f"[dim]({escape(str(link.get('kind')))})[/]"
        out.print(f"{'   ' * depth}└─ because {escape(str(link.get('message')))} {kind}")


def _progress_line(progress: dict[str, Any]) -> str:
    """``3/5 deployed, 1 failed, 1 waiting`` (counts that are zero left out)."""
    parts = [f"{progress.get('deployed', 0)}/{progress.get('total', 0)} deployed"]
    parts += [f"{progress[k]} {k}" for k in ("failed", "skipped", "waiting") if progress.get(k)]
    return ", ".join(parts)


def _resource_problem(resource: dict[str, Any]) -> str:
    """A failed resource with its last error, a skipped one with what blocked it."""
    line = f"{resource.get('id')} ({resource.get('status')})"
    if resource.get("blocked_by"):
        return f"{line}: requires {', '.join(resource['blocked_by'])}"
    if resource.get("last_error"):
        return f"{line}: {resource['last_error']}"
    return line


# -- compiles and desired state ------------------------------------------------------------------------
@app.command("compile")
def compile_(
    full: Annotated[
        bool, typer.Option("--full", help="A full compile (the default without --entity/--id).")
    ] = False,
    entity: Annotated[
        list[str] | None, typer.Option("--entity", help="Partial: every instance of it.")
    ] = None,
    instance_id: Annotated[
        list[str] | None, typer.Option("--id", help="Partial: this instance's tree.")
    ] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Leave this instance out.")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Return when the compile finished.")] = False,
    complete: Annotated[
        bool,
        typer.Option(
            "--complete",
            help="Full: refine every tree, not only those whose instances changed (suspected drift).",
        ),
    ] = False,
    selector: Annotated[
        str | None,
        typer.Option("--selector", help='Partial: a selector name, or JSON ({"name", "params"} or a list).'),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show what a partial compile would select and why; run nothing.")
    ] = False,
    retry: Annotated[
        str | None,
        typer.Option(
            "--retry", metavar="ID", help="Queue this failed exporting compile again (same selection)."
        ),
    ] = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Request a compile: full, or partial for instances (--id) and entities (--entity); or
    retry a failed one (--retry ID) once its cause is gone."""
    if retry is not None and (full or entity or instance_id or exclude or selector or explain or complete):
        raise typer.BadParameter("--retry repeats the failed compile's own selection", param_hint="--retry")
    if full and (entity or instance_id):
        raise typer.BadParameter(
            "--full compiles everything; leave out --entity and --id", param_hint="--full"
        )
    spec = _selector_spec(selector)
    kind = "partial" if (entity or instance_id or spec is not None or explain) else "full"
    if explain:
        if full:
            raise typer.BadParameter("--explain explains a partial compile", param_hint="--explain")
        call(
            url,
            environment,
            as_json,
            lambda c: c.explain_compile(
                instance_ids=instance_id, service_entities=entity, exclude=exclude, selector=spec
            ),
            _show_selection,
        )
        return
    if complete and kind != "full":
        raise typer.BadParameter("--complete is for full compiles", param_hint="--complete")

    def show(report: dict[str, Any]) -> None:
        _print_kv(
            {
                k: report.get(k)
                for k in (
                    "id",
                    "kind",
                    "status",
                    "merged_into",
                    "desired_state_version",
                    "created_at",
                    "finished_at",
                )
            },
            title="compile",
        )
        error = (report.get("report") or {}).get("error")
        if error:
            err.print(f"[red]compile error:[/] {escape(render.compact(error))}")

    def request(client: Client) -> dict[str, Any]:
        def ask() -> dict[str, Any]:
            if retry is not None:
                return client.retry_compile(retry)
            return client.request_compile(
                kind=kind,
                instance_ids=instance_id,
                service_entities=entity,
                exclude=exclude,
                incremental=False if complete else None,
                selector=spec,
            )

        if not wait:
            return ask()
        return _follow_compile(client, ask, progress=err.is_terminal and not as_json)

    report = call(url, environment, as_json, request, show)
    if wait and report.get("status") == "failed":
        raise typer.Exit(1)


def _follow_compile(client: Client, ask: Callable[[], dict[str, Any]], *, progress: bool) -> dict[str, Any]:
    """Request a compile and follow the event stream until it finished; its final report.

    The stream is opened first, so that the completion cannot slip between the request and the
    subscription; a compile that finished before the stream saw it is found by the read after.
    On a terminal a spinner shows the steps; otherwise each step is a plain line on stderr.
    """
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with client.events() as stream:
        queued = ask()
        report = client.get_compile(queued["id"])
        if report["status"] in ("success", "failed"):
            return report
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=err, transient=True, disable=not progress) as bar:
            task = bar.add_task(f"compile {queued['id'][:8]} {report['status']}", total=None)
            for event in stream:
                line = _event_line(event.event, event.data)
                if progress:
                    bar.update(task, description=line)
                else:
                    err.print(escape(line))
                if event.event == "compile_finished" and event.data.get("id") == queued["id"]:
                    break
    return client.get_compile(queued["id"])


def _event_line(kind: str, data: dict[str, Any]) -> str:
    if kind == "compile_finished":
        return f"compile {str(data.get('id'))[:8]} ({data.get('kind')}) {data.get('status')}"
    instance = str(data.get("instance_id"))[:8]
    return f"{data.get('service_entity')} {instance}: {data.get('source')} → {data.get('target')}"


def _selector_spec(value: str | None) -> Any:
    """``--selector``: a plain name, or JSON for parameters and unions."""
    if value is None or not value.strip().startswith(("{", "[", '"')):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint="--selector") from None


def _show_selection(data: dict[str, Any]) -> None:
    """``lsm compile --explain``: per requested instance, what it brought in and why."""
    out.print(f"selector: {escape(render.compact(data.get('selector')))}")
    table = render.table("selection (dry run: nothing compiled)", ("requested", "added", "why"))
    for origin, added in (data.get("added") or {}).items():
        if not added:
            table.add_row(origin, "-", "-")
        for instance_id, reason in added.items():
            table.add_row(origin, instance_id, reason)
    out.print(table)
    if data.get("completed"):
        out.print(f"completed by the engine (whole trees): {', '.join(data['completed'])}")
    out.print(f"resource sets replaced or deleted: {', '.join(data.get('roots') or []) or 'none'}")


@selector_app.command("list")
def selector_list(url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False) -> None:
    """The selectors this environment can use, with their parameters."""

    def show(selectors: list[dict[str, Any]]) -> None:
        table = render.table("selectors", ("name", "parameters", "class"))
        for item in selectors:
            params = ", ".join(
                f"{name}{'' if p.get('required') else '?'}: {p.get('type')}"
                for name, p in (item.get("parameters") or {}).items()
            )
            table.add_row(item["name"], params or "-", item.get("class", ""))
        out.print(table)

    call(url, environment, as_json, lambda c: c.list_selectors(), show)


# -- resources and deploy ----------------------------------------------------------------------------
#: how a resource status is shown in tables
_STATUS_STYLE = {
    "deployed": "green",
    "failed": "red",
    "skipped": "yellow",
    "pending": "cyan",
    "deploying": "blue",
    "noop_pending": "magenta",
}
#: seconds between looks at the deploy status while ``lsm deploy --wait`` waits
DEPLOY_POLL = 0.5


def _status(value: Any) -> str:
    text = escape(str(value or ""))
    style = _STATUS_STYLE.get(str(value))
    return f"[{style}]{text}[/]" if style else text


@resources_app.callback(invoke_without_command=True)
def resources_list(
    ctx: typer.Context,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's resources.")] = None,
    status: Annotated[
        str | None,
        typer.Option(
            "--status", help="Only this status: pending, deploying, deployed, failed, skipped, noop_pending."
        ),
    ] = None,
    resource_type: Annotated[
        str | None, typer.Option("--type", help="Only this type, e.g. std::File.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many (1..1000).")] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many (paging, in id order).")] = 0,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """The resources of the newest desired state and where their deploy stands (``show ID``: one)."""
    if ctx.invoked_subcommand is not None:
        return

    def show(resources: list[dict[str, Any]]) -> None:
        table = render.table(
            "resources",
            ("id", "agent", "status", "version", "deployed", "tries", "last action", "at", "error"),
        )
        for r in resources:
            table.add_row(
                escape(r["id"]),
                escape(r["agent"]),
                _status(r["status"]),
                render.cell(r.get("version")),
                render.cell(r.get("last_deployed_version")),
                render.cell(r.get("attempts") or None),
                render.cell(r.get("last_action")),
                render.cell(r.get("last_action_at")),
                render.first_line(r.get("last_error")),
            )
        out.print(table)
        if not resources:
            out.print("[dim](none)[/]")

    call(
        url,
        environment,
        as_json,
        lambda c: c.resources(
            agent=agent, status=status, resource_type=resource_type, limit=limit, offset=offset
        ),
        show,
    )


@resources_app.command("show")
def resources_show(
    resource_id: Annotated[str, typer.Argument(help="The resource id, e.g. 'std::File[h1,path=/tmp/x]'.")],
    actions: Annotated[
        int, typer.Option("--actions", help="Show this many of its actions (newest first).")
    ] = 10,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """One resource: its deploy state, desired attributes and latest actions."""

    def request(client: Client) -> dict[str, Any]:
        resource = client.resource(resource_id)
        return {"resource": resource, "actions": client.resource_actions(resource_id, limit=actions)}

    def show(data: dict[str, Any]) -> None:
        resource = dict(data["resource"])
        attributes = resource.pop("attributes", None) or {}
        _print_kv(resource, title="resource")
        if attributes:
            _print_kv(attributes, title="desired attributes")
        table = render.table(
            "actions (newest first)", ("id", "started", "action", "status", "ms", "changes", "message")
        )
        for a in data["actions"]:
            messages = a.get("messages") or []
            action = escape(str(a["action"])) + (" (dry run)" if a.get("dry_run") else "")
            table.add_row(
                str(a["id"]),
                render.cell(a.get("started_at")),
                action,
                _status(a.get("status")),
                f"{float(a.get('duration_ms') or 0):.1f}",
                escape(", ".join(a.get("changes") or {})),
                render.first_line(messages[-1].get("message") if messages else None),
            )
        out.print(table)

    call(url, environment, as_json, request, show)


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


@app.command("deploy")
def deploy(
    agent: Annotated[list[str] | None, typer.Option("--agent", help="Only this agent (repeatable).")] = None,
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
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Deploy the newest desired state again (failed and skipped resources), or dry-run it.

    Exit code 1 when a dry-run item has an error, or with --wait when resources failed or
    were skipped or the deploy did not finish in time.
    """
    from lsm.client import Client

    if dry_run and (wait or repair):
        raise typer.BadParameter(
            "--dry-run changes nothing: leave out --wait and --repair", param_hint="--dry-run"
        )
    if timeout <= 0:
        raise typer.BadParameter("must be positive", param_hint="--timeout")
    agents = list(agent) if agent else None
    if dry_run:
        result = call(
            url,
            environment,
            as_json,
            lambda c: c.deploy(dry_run=True, agents=agents, timeout=timeout),
            _show_dry_run,
        )
        if any(item.get("error") for item in result.get("resources") or []):
            raise typer.Exit(1)
        return
    with errors_reported(url), Client(url, environment) as client:
        result = client.deploy(agents=agents, repair=repair)
        if not as_json:
            version = result.get("version")
            of_version = f" (desired-state version {version})" if version is not None else ""
            out.print(f"{result.get('scheduled')} resource(s) scheduled{of_version}")
        if not wait:
            if as_json:
                typer.echo(json.dumps(result, indent=2, default=str))
            return
        status = _follow_deploy(client, agents, timeout=timeout, progress=err.is_terminal and not as_json)
    if as_json:
        typer.echo(json.dumps({**result, "status": status}, indent=2, default=str))
    else:
        counts = status.get("counts") or {}
        out.print(
            "deployed: "
            + (", ".join(f"{_status(k)} {v}" for k, v in sorted(counts.items())) or "no resources")
        )
    counts = status.get("counts") or {}
    if counts.get("failed") or counts.get("skipped"):
        raise typer.Exit(1)


# -- discovery ---------------------------------------------------------------------------------------
@app.command("discovered")
def discovered(
    resource_id: Annotated[
        str | None, typer.Argument(help="One discovered resource id; all when absent.")
    ] = None,
    resource_type: Annotated[str | None, typer.Option("--type", help="Only this resource type.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only resources of this agent.")] = None,
    managed: Annotated[
        bool | None, typer.Option("--managed/--unmanaged", help="Only managed, or only unmanaged, ones.")
    ] = None,
    discovered_by: Annotated[
        str | None, typer.Option("--discovered-by", help="Only what this discovery resource found.")
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many.")] = 0,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Resources the discovery resources found, whether managed, and who adopted them."""

    def request(client: Client) -> Any:
        if resource_id is not None:
            return client.discovered_resource(resource_id)
        return client.discovered(
            resource_type=resource_type,
            agent=agent,
            managed=managed,
            discovered_by=discovered_by,
            limit=limit,
            offset=offset,
        )

    def show(data: Any) -> None:
        if isinstance(data, dict):
            _print_kv(data, title=str(data.get("id")))
            return
        table = render.table(
            "discovered resources", ("id", "managed", "adopted by", "discovered by", "last seen")
        )
        for row in data:
            table.add_row(
                escape(row["id"]),
                "yes" if row["managed"] else "no",
                render.cell(row.get("adopted_by")),
                escape(row["discovered_by"]),
                render.cell(row["last_seen"]),
            )
        out.print(table)

    call(url, environment, as_json, request, show)


@app.command("adopt")
def adopt(
    entity: Annotated[str, typer.Argument(help="Entity (API name) the instances are made of.")],
    discovered_ids: Annotated[list[str], typer.Argument(help="Discovered resource ids to adopt.")],
    initial_state: Annotated[
        str | None, typer.Option("--initial-state", help="An adoption state of the lifecycle.")
    ] = None,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Adopt discovered resources as instances of ENTITY: all of them, or none."""
    call(
        url,
        environment,
        as_json,
        lambda c: c.adopt(entity, discovered_ids, initial_state=initial_state),
        lambda instances: out.print(_instances_table(instances, f"adopted as {entity}")),
    )


# -- environments ------------------------------------------------------------------------------------
@environment_app.command("list")
def environment_list(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """Every environment."""

    def show(envs: list[dict[str, Any]]) -> None:
        table = render.table("environments", ("name", "id", "model", "created"))
        for e in envs:
            table.add_row(
                escape(e["name"]), e["id"], render.cell(e.get("model")), render.cell(e.get("created_at"))
            )
        out.print(table)

    call(url, None, as_json, lambda c: c.environments(), show)


@environment_app.command("create")
def environment_create(
    name: Annotated[str, typer.Argument(help="The new environment's name.")],
    model: Annotated[str | None, typer.Option("--model", help="Its model; the server's when absent.")] = None,
    url: Url = DEFAULT_URL,
    as_json: AsJson = False,
) -> None:
    """Create an environment."""
    call(
        url, None, as_json, lambda c: c.create_environment(name, model), lambda e: _print_kv(e, "environment")
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


@environment_app.command("settings")
def environment_settings(
    url: Url = DEFAULT_URL, environment: Environment = None, as_json: AsJson = False
) -> None:
    """An environment's settings with their defaults."""
    call(url, environment, as_json, lambda c: c.settings(), _show_settings)


@environment_app.command("set")
def environment_set(
    key: Annotated[str, typer.Argument(help="Setting key, e.g. partial_compiles.")],
    value: Annotated[str, typer.Argument(help="The value; JSON when it parses (true, 5), else a string.")],
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Set one setting of an environment."""
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    call(url, environment, as_json, lambda c: c.set_setting(key, parsed), _show_settings)


# -- tokens and audit -----------------------------------------------------------------------------------
def _parse_roles(roles: list[str] | None) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in roles or []:
        env, sep, role = item.rpartition("=")
        if not sep or not env.strip() or not role.strip():
            raise typer.BadParameter(f"expected environment=role, got {item!r}", param_hint="--role")
        parsed[env.strip()] = role.strip()
    return parsed


def _show_token(data: dict[str, Any]) -> None:
    _print_kv({k: v for k, v in data.items() if k != "token"}, "token")
    if data.get("token"):
        err.print("[bold]the token (shown once, store it now):[/]")
        typer.echo(data["token"])


@token_app.command("create")
def token_create(
    name: Annotated[str, typer.Argument(help="Who or what the token is for.")] = "admin",
    role: Annotated[
        list[str] | None,
        typer.Option("--role", "-r", help="environment=role (viewer, operator, admin; * = every one)."),
    ] = None,
    admin: Annotated[
        bool,
        typer.Option(
            "--admin",
            help="An admin token over every environment, written straight into the database "
            "(run on the server's machine: the first token, before authentication is on).",
        ),
    ] = False,
    expires_in_days: Annotated[float, typer.Option("--expires-in-days", help="Lifetime in days.")] = 90.0,
    database: Annotated[
        str | None, typer.Option("--database", help="With --admin: database URL (LSM_DATABASE_URL).")
    ] = None,
    config: Annotated[str | None, typer.Option("--config", help="With --admin: configuration file.")] = None,
    url: Url = DEFAULT_URL,
    as_json: AsJson = False,
) -> None:
    """Create a token and print it once."""
    seconds = int(expires_in_days * 86400)
    if not admin:
        roles = _parse_roles(role)
        if not roles:
            raise typer.BadParameter("give at least one --role environment=role (or --admin)")
        call(url, None, as_json, lambda c: c.create_token(name, roles, expires_in=seconds), _show_token)
        return
    if role:
        raise typer.BadParameter(
            "--admin makes an admin over every environment: no --role", param_hint="--role"
        )
    from datetime import UTC, datetime, timedelta

    from lsm.inventory import audit, tokens
    from lsm.inventory.database import Database
    from lsm.runtime.config import load_config

    with errors_reported():
        settings = load_config(config, database_url=database)
        db = Database(settings.database_url)
        try:
            db.create_schema()
            expires_at = datetime.now(UTC) + timedelta(seconds=seconds)
            with db.write() as session:
                row, secret = tokens.issue(
                    session,
                    name=name,
                    roles={"*": "admin"},
                    expires_at=expires_at,
                    created_by="lsm token create",
                )
                audit.record(
                    session,
                    actor="lsm token create --admin",
                    request_id=None,
                    action="token.create",
                    target=row.id,
                    name=name,
                    roles={"*": "admin"},
                )
                token_id = row.id
        finally:
            db.dispose()
    data = {"id": token_id, "name": name, "roles": {"*": "admin"}, "expires_at": expires_at.isoformat()}
    if as_json:
        typer.echo(json.dumps({**data, "token": secret}, indent=2))
    else:
        _show_token({**data, "token": secret})


@token_app.command("list")
def token_list(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """Every token, with its roles, expiry and revocation (never a secret)."""

    def show(items: list[dict[str, Any]]) -> None:
        table = render.table("tokens", ("id", "name", "roles", "expires", "revoked"))
        for t in items:
            table.add_row(
                t["id"],
                escape(t["name"]),
                render.cell(t.get("roles")),
                render.cell(t.get("expires_at")),
                render.cell(t.get("revoked_at")),
            )
        out.print(table)

    call(url, None, as_json, lambda c: c.tokens(), show)


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[str, typer.Argument(help="The token's id (lsm token list).")],
    url: Url = DEFAULT_URL,
    as_json: AsJson = False,
) -> None:
    """Revoke a token: refused from its next request on."""
    call(url, None, as_json, lambda c: c.revoke_token(token_id), lambda t: _print_kv(t, "revoked"))


@app.command("audit")
def audit_list(
    actor: Annotated[str | None, typer.Option("--actor", help="Only this actor.")] = None,
    action: Annotated[
        str | None, typer.Option("--action", help="Only this action (and sub-actions).")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only from this time on (ISO 8601).")] = None,
    of: Annotated[str | None, typer.Option("--of", help="Only this environment (name or id).")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many lines.")] = 100,
    offset: Annotated[int, typer.Option("--offset", help="Skip this many lines.")] = 0,
    url: Url = DEFAULT_URL,
    as_json: AsJson = False,
) -> None:
    """Who did what, when (admins): newest first."""

    def show(lines: list[dict[str, Any]]) -> None:
        table = render.table("audit", ("time", "actor", "action", "target", "environment", "request"))
        for line in lines:
            table.add_row(
                render.cell(line.get("time")),
                render.cell(line.get("actor")),
                render.cell(line.get("action")),
                render.cell(line.get("target")),
                render.cell(line.get("environment")),
                render.cell(line.get("request_id")),
            )
        out.print(table)

    call(
        url,
        None,
        as_json,
        lambda c: c.audit(
            actor=actor, action=action, since=since, environment=of, limit=limit, offset=offset
        ),
        show,
    )


def main() -> None:
    """Entry point of the ``lsm`` console script."""
    app(prog_name="lsm")


# Command groups that live in their own modules register themselves on ``app`` when imported;
# they are imported last, once every shared helper above exists.
from lsm.cli import desired_state as _desired_state  # noqa: E402, F401  # registers lsm desired-state; imported last, after the helpers it uses
from lsm.cli import expert as _expert  # noqa: E402,F401  (registers lsm expert)
from lsm.cli import graph as _graph  # noqa: E402,F401  (registers ``lsm graph``)
from lsm.cli import halts as _halts  # noqa: E402,F401  (registers lsm environment halt|resume, lsm agent pause|unpause)
from lsm.cli import webhooks as _webhooks  # noqa: E402,F401  (registers lsm webhook)
