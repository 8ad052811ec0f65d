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

from lsm.errors import LsmError

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
app.add_typer(catalog_app, name="catalog")
app.add_typer(instance_app, name="instance")
app.add_typer(environment_app, name="environment")
app.add_typer(lifecycle_app, name="lifecycle")
app.add_typer(selector_app, name="selector")

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
                    err.print(f"  - {escape(_compact(item))}")
        else:
            err.print(f"  {escape(key)}: {escape(_compact(value))}")
    return typer.Exit(1)


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


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

    with errors_reported(url), Client(url, environment) as client:
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


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return escape(_compact(value))


#: columns whose cells are short identifiers: never wrapped, so that ids can be copied whole
_NO_WRAP = frozenset(
    {"id", "entity", "lifecycle", "state", "key", "source", "target", "trigger", "attribute"}
)


def _table(title: str | None, columns: tuple[str, ...]) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, no_wrap=column in _NO_WRAP)
    return table


def _print_kv(data: dict[str, Any], title: str | None = None) -> None:
    from rich.table import Table

    table = Table(show_header=False, title=title, title_justify="left", box=None)
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, value in data.items():
        table.add_row(escape(str(key)), _cell(value))
    out.print(table)


# -- server side ----------------------------------------------------------------------------------------
@app.command()
def server(
    model: Annotated[str | None, typer.Option("--model", help="Model path or module (LSM_MODEL).")] = None,
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
) -> None:
    """Run the API with its embedded compile worker and deploy agent until interrupted."""
    import uvicorn

    from lsm.runtime.config import load_config
    from lsm.runtime.wiring import build_api

    with errors_reported():
        settings = load_config(config, database_url=database, model=model, host=host, port=port)
        runtime = build_api(settings.model_copy(update={"embedded_agent": agent}))
        runtime.start()
    try:
        err.print(f"lsm server on http://{settings.host}:{settings.port} (database {settings.database_url})")
        uvicorn.run(runtime.app, host=settings.host, port=settings.port, log_level="info")
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
    import threading

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
    _dump_threads_on_sigusr1()
    err.print(f"lsm worker on {settings.database_url}; Ctrl-C to stop")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        runtime.stop()


@app.command()
def agent(
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
    names are taken over once its lease expired).
    """
    import threading

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
    _dump_threads_on_sigusr1()
    err.print(f"lsm agent on {settings.database_url}; Ctrl-C to stop")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        runtime.stop()


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
        table = _table(
            "service catalog", ("entity", "lifecycle", "identity", "owner", "attributes", "instances")
        )
        for entity in entities:
            lifecycle = entity.get("lifecycle")
            summary = entity.get("instance_summary") or {}
            table.add_row(
                escape(entity["name"]),
                escape(lifecycle.get("name", "") if isinstance(lifecycle, dict) else str(lifecycle or "")),
                _cell(entity.get("identity")),
                _cell(entity.get("owner")),
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
        table = _table(
            "attributes", ("name", "type", "modifier", "required", "default", "relation", "description")
        )
        for a in data.get("attributes", []):
            table.add_row(
                escape(a["name"]),
                _cell(a.get("type")),
                _cell(a.get("modifier")),
                "yes" if a.get("required") else "",
                "" if a.get("required") else _cell(a.get("default")),
                _cell((a.get("relation") or {}).get("target")),
                _cell(a.get("description")),
            )
        out.print(table)

    def request(client: Client) -> dict[str, Any]:
        return client.schema(entity) if schema else client.entity(entity)

    call(url, environment, as_json, request, show)


# -- instances -------------------------------------------------------------------------------------------
def _instances_table(instances: list[dict[str, Any]], title: str) -> Table:
    table = _table(title, ("id", "state", "version", "owner", "attributes"))
    for i in instances:
        attributes = i.get("active_attributes") or i.get("candidate_attributes") or {}
        state = escape(i["state"]) + (" [dim](deleted)[/]" if i.get("deleted") else "")
        table.add_row(i["id"], state, str(i["version"]), _cell(i.get("owner")), _cell(attributes))
    return table


def _show_instance(instance: dict[str, Any]) -> None:
    head = {
        k: instance.get(k)
        for k in ("id", "service_entity", "state", "version", "desired_state_version", "owner", "deleted")
    }
    head.update(created_at=instance.get("created_at"), last_updated=instance.get("last_updated"))
    _print_kv(head, title=f"{instance.get('service_entity')} instance")
    table = _table("attributes", ("attribute", "candidate", "active", "rollback"))
    sets = [instance.get(f"{s}_attributes") or {} for s in ("candidate", "active", "rollback")]
    for key in sorted({k for s in sets for k in s}):
        table.add_row(escape(key), *(_cell(s[key]) if key in s else "" for s in sets))
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
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """The instance's event log, oldest first."""

    def show(events: list[dict[str, Any]]) -> None:
        table = _table("event log", ("version", "time", "source", "target", "trigger", "compile", "message"))
        for e in events:
            target = (
                ("[red]" + escape(e["target"]) + " (error)[/]") if e.get("is_error") else escape(e["target"])
            )
            table.add_row(
                str(e["version"]),
                _cell(e.get("created_at")),
                _cell(e.get("source")),
                target,
                escape(e["trigger"]),
                _cell(e.get("compile_id")),
                _cell(e.get("message")),
            )
        out.print(table)

    call(url, environment, as_json, lambda c: c.instance_log(entity, ref), show)


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
    return line + (f" ({_compact(error)})" if error else "")


def _show_diagnosis(data: dict[str, Any]) -> None:
    """The diagnosis as short lines; ``--json`` has everything."""
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
    resources = data.get("resources") or []
    summary["failed resources"] = ", ".join(f"{r.get('id')} ({r.get('status')})" for r in resources) or None
    _print_kv(summary, title="diagnosis")


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
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Request a compile: full, or partial for instances (--id) and entities (--entity)."""
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
            err.print(f"[red]compile error:[/] {escape(_compact(error))}")

    def request(client: Client) -> dict[str, Any]:
        def ask() -> dict[str, Any]:
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
    out.print(f"selector: {escape(_compact(data.get('selector')))}")
    table = _table("selection (dry run: nothing compiled)", ("requested", "added", "why"))
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
        table = _table("selectors", ("name", "parameters", "class"))
        for item in selectors:
            params = ", ".join(
                f"{name}{'' if p.get('required') else '?'}: {p.get('type')}"
                for name, p in (item.get("parameters") or {}).items()
            )
            table.add_row(item["name"], params or "-", item.get("class", ""))
        out.print(table)

    call(url, environment, as_json, lambda c: c.list_selectors(), show)


@app.command("desired-state")
def desired_state(
    version: Annotated[int | None, typer.Argument(help="A version; all versions when absent.")] = None,
    resources: Annotated[bool, typer.Option("--resources", help="List the version's resources.")] = False,
    url: Url = DEFAULT_URL,
    environment: Environment = None,
    as_json: AsJson = False,
) -> None:
    """Desired-state versions (newest first), or one version's resource sets or resources."""

    def request(client: Client) -> Any:
        if version is None:
            return client.desired_states()
        return client.desired_state_resources(version) if resources else client.desired_state(version)

    def show(data: Any) -> None:
        if isinstance(data, dict):
            _print_kv(data, title=f"desired state {version}")
            return
        if not data:
            out.print("[dim](none)[/]")
            return
        from rich.table import Table

        table = Table(title_justify="left")
        columns = list(dict.fromkeys(k for row in data for k in row))
        for column in columns:
            table.add_column(column)
        for row in data:
            table.add_row(*(_cell(row.get(c)) for c in columns))
        out.print(table)

    call(url, environment, as_json, request, show)


# -- environments ------------------------------------------------------------------------------------
@environment_app.command("list")
def environment_list(url: Url = DEFAULT_URL, as_json: AsJson = False) -> None:
    """Every environment."""

    def show(envs: list[dict[str, Any]]) -> None:
        table = _table("environments", ("name", "id", "model", "created"))
        for e in envs:
            table.add_row(escape(e["name"]), e["id"], _cell(e.get("model")), _cell(e.get("created_at")))
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
    table = _table("settings", ("key", "value", "default", "description"))
    for key, meta in settings.items():
        if isinstance(meta, dict) and "value" in meta:
            table.add_row(
                escape(key), _cell(meta["value"]), _cell(meta.get("default")), _cell(meta.get("description"))
            )
        else:
            table.add_row(escape(key), _cell(meta), "", "")
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


def main() -> None:
    """Entry point of the ``lsm`` console script."""
    app(prog_name="lsm")


if __name__ == "__main__":
    main()
