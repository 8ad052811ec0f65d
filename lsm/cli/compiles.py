"""``lsm compile``: request a compile (full or partial), explain a partial one's selection,
retry a failed one, and follow it to its end with ``--wait``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import err, out
from lsm.cli.options import shared

if TYPE_CHECKING:
    from lsm.client import Client


def compile_(
    ctx: typer.Context,
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
            ctx,
            lambda c: c.explain_compile(
                instance_ids=instance_id, service_entities=entity, exclude=exclude, selector=spec
            ),
            _show_selection,
        )
        return
    if complete and kind != "full":
        raise typer.BadParameter("--complete is for full compiles", param_hint="--complete")

    def show(report: dict[str, Any]) -> None:
        render.print_key_values(
            out,
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
        return _follow_compile(client, ask, progress=err.is_terminal and not shared(ctx).json)

    report = call(ctx, request, show)
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
