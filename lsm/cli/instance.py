"""``lsm instance create|bulk|list|show|update|set-state|delete|log|diagnose``: service
instances, ordered, changed and inspected through a running server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call, connected, print_json
from lsm.cli.console import err, out
from lsm.cli.diagnosis import show_diagnosis
from lsm.cli.instance_views import instances_table, show_instance
from lsm.cli.options import shared
from lsm.cli.params import Attr, AttributesJson, CurrentVersion, Entity, Ref, Timeout, Wait, parse_attributes
from lsm.cli.wait import Standing, follow, report, stream_client

if TYPE_CHECKING:
    from lsm.client import Client

app = typer.Typer(help="Service instances: order, change, inspect.", no_args_is_help=True)


@app.command("create")
def instance_create(
    ctx: typer.Context,
    entity: Entity,
    attr: Attr = None,
    attributes: AttributesJson = None,
    instance_id: Annotated[str | None, typer.Option("--id", help="Choose the instance id (a UUID).")] = None,
    initial_state: Annotated[
        str | None, typer.Option("--initial-state", help="An alternative initial state.")
    ] = None,
    wait: Wait = False,
    timeout: Timeout = 600.0,
) -> None:
    """Order a new instance (version 1, in the lifecycle's initial state)."""
    values = parse_attributes(attr, attributes)
    changed(
        ctx,
        lambda c: c.create_instance(entity, values, instance_id=instance_id, initial_state=initial_state),
        entity,
        "up" if wait else None,
        timeout,
    )


@app.command("bulk")
def instance_bulk(
    ctx: typer.Context,
    file: Annotated[
        str, typer.Argument(help="JSON or YAML file: {entity?, create: [...], update: [...]}; - for stdin.")
    ],
    entity: Annotated[
        str | None, typer.Option("--entity", help="Entity (API name); else the file's `entity`.")
    ] = None,
) -> None:
    """Create and update many instances in one transaction: all of them, or none.

    create items are {attributes, service_instance_id?}; update items are {id, current_version,
    attributes}, id being an instance id or <identity_attr>=<value>. On a refusal every
    refused item is listed and nothing is written.
    """
    data = read_data_file(file)
    if not isinstance(data, dict):
        raise typer.BadParameter(
            f"{file} must hold an object with `create` and/or `update`", param_hint="FILE"
        )
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
                out.print(instances_table(result[key], f"{name} instances {title}"))
        out.print(f"{len(result.get('created', []))} created, {len(result.get('updated', []))} updated")

    call(ctx, lambda c: c.bulk(name, create=create, update=update), show)


def read_data_file(file: str) -> Any:
    """The data of a JSON or YAML file, ``-`` for stdin (YAML is a superset of JSON: one parser
    reads both): a bulk request, an order."""
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
    return data


@app.command("list")
def instance_list(
    ctx: typer.Context,
    entity: Entity,
    state: Annotated[
        list[str] | None, typer.Option("--state", "-s", help="Only this state; repeatable.")
    ] = None,
    include_deleted: Annotated[
        bool, typer.Option("--include-deleted", help="Show deleted instances too.")
    ] = False,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    offset: Annotated[int, typer.Option(help="Skip this many.")] = 0,
    sort: Annotated[
        str,
        typer.Option(
            help="Sort key: created_at, last_updated, state, version, id or identity; -key: descending."
        ),
    ] = "created_at",
    identity: Annotated[
        str | None, typer.Option("--identity", help="Only those whose identity contains this (any case).")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            help="Only those whose attribute equals the value, NAME=VALUE (repeatable, all must match).",
        ),
    ] = None,
) -> None:
    """The entity's instances, searched by identity and attribute, sorted."""
    matches: dict[str, str] = {}
    for item in where or []:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise typer.BadParameter(f"{item!r} is not NAME=VALUE", param_hint="--where")
        matches[name] = value
    call(
        ctx,
        lambda c: c.list_instances(
            entity,
            states=state,
            include_deleted=include_deleted,
            limit=limit,
            offset=offset,
            sort=sort,
            identity=identity,
            attributes=matches or None,
        ),
        lambda instances: out.print(instances_table(instances, f"{entity} instances")),
    )


@app.command("show")
def instance_show(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
) -> None:
    """One instance with its three attribute sets."""
    call(ctx, lambda c: c.get_instance(entity, ref), show_instance)


@app.command("update")
def instance_update(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    current_version: CurrentVersion,
    attr: Attr = None,
    attributes: AttributesJson = None,
    wait: Wait = False,
    timeout: Timeout = 600.0,
) -> None:
    """Change attributes (merged into the candidate set; fires the state's on_update transfer)."""
    values = parse_attributes(attr, attributes)
    if not values:
        raise typer.BadParameter("give --attr key=value or --attributes '{...}'", param_hint="--attr")
    changed(
        ctx,
        lambda c: c.update_instance(entity, ref, current_version=current_version, attributes=values),
        entity,
        "up" if wait else None,
        timeout,
    )


@app.command("set-state")
def instance_set_state(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    target_state: Annotated[str, typer.Argument(help="The state to go to (an api_set_state transfer).")],
    current_version: CurrentVersion,
    message: Annotated[str | None, typer.Option("--message", "-m", help="Recorded in the event log.")] = None,
) -> None:
    """Move an instance to another state through its api_set_state transfer."""
    call(
        ctx,
        lambda c: c.set_state(
            entity, ref, current_version=current_version, target_state=target_state, message=message
        ),
        show_instance,
    )


@app.command("delete")
def instance_delete(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    current_version: CurrentVersion,
    wait: Wait = False,
    timeout: Timeout = 600.0,
) -> None:
    """Delete an instance (fires the state's on_delete transfer)."""
    changed(
        ctx,
        lambda c: c.delete_instance(entity, ref, current_version=current_version),
        entity,
        "terminated" if wait else None,
        timeout,
    )


def changed(
    ctx: typer.Context, request: Callable[[Client], Any], entity: str, target: str | None, timeout: float
) -> None:
    """Make the change and show the instance; with a ``target`` (``--wait``) follow it there
    first (``lsm.cli.wait``: exit 0 there, 1 failed with its diagnosis, 3 on time-out)."""
    if target is None:
        call(ctx, request, show_instance)
        return
    with connected(ctx) as client:
        instance = request(client)
        states = client.entity(entity)["lifecycle"]["states"]
        danger = {s["name"] for s in states if s.get("label") == "danger"}
        latest = [instance]

        def check() -> Standing:
            latest[0] = now = client.get_instance(entity, instance["id"])
            failed = []
            if now["state"] != target and (now["state"] in danger or now.get("deleted")):
                summary = client.diagnose(entity, instance["id"]).get("summary") or now["state"]
                failed.append(f"{entity} {instance['id']}: {summary}")
            return Standing(int(now["state"] == target), 1, failed)

        code, standing = follow(
            lambda: stream_client(ctx),
            {str(instance["id"])},
            check,
            timeout=timeout,
            what=f"{entity} {target}",
        )
    report(standing, code, timeout)
    if shared(ctx).json:
        print_json(latest[0])
    else:
        show_instance(latest[0])
    raise typer.Exit(code)


@app.command("log")
def instance_log(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow", "-f", help="Then print each new line as it happens, until Ctrl-C (not with --json)."
        ),
    ] = False,
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
        call(ctx, lambda c: c.instance_log(entity, ref), show)
        return
    if shared(ctx).json:
        raise typer.BadParameter(
            "--follow prints lines for a person; use --json without it", param_hint="--json"
        )
    from lsm.cli.follow import LogFollower

    with connected(ctx) as client:
        LogFollower(client, entity, ref, out=out, err=err, show_initial=show).run()


@app.command("diagnose")
def instance_diagnose(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
) -> None:
    """Why an instance is where it is: failing validation, failed resources, pending compile."""
    call(ctx, lambda c: c.diagnose(entity, ref), show_diagnosis)
