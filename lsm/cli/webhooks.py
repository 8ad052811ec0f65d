"""``lsm webhook add|list|show|rm|ping|deliveries``: webhooks of an environment, from the CLI.

Registering, removing and pinging need the admin role; listing and the delivery log, operator.
The secret is printed once, by ``add``.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call
from lsm.cli.console import out

app = typer.Typer(help="Webhooks: signed callbacks of the environment's events.", no_args_is_help=True)

WebhookId = Annotated[str, typer.Argument(help="The webhook's id (lsm webhook list).")]


def _show_created(hook: dict[str, Any]) -> None:
    render.print_key_values(out, {k: v for k, v in hook.items() if k != "secret"}, "webhook")
    out.print(f"secret (shown once; verify X-LSM-Signature with it): [bold]{escape(hook['secret'])}[/]")


@app.command("add")
def webhook_add(
    ctx: typer.Context,
    url_to_call: Annotated[str, typer.Argument(metavar="URL", help="http(s) URL that receives the POSTs.")],
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event",
            help="instance_state, compile_finished, deploy_outcome or deploy_failed (repeat; "
            "default: instance_state, compile_finished, deploy_failed).",
        ),
    ] = None,
    secret: Annotated[str | None, typer.Option("--secret", help="The HMAC key (default: generated).")] = None,
) -> None:
    """Register a receiver for the events from now on; prints its secret once."""
    call(
        ctx,
        lambda c: c.create_webhook(url_to_call, events=event or None, secret=secret),
        _show_created,
    )


@app.command("list")
def webhook_list(ctx: typer.Context) -> None:
    """The environment's webhooks (never a secret)."""

    def show(items: list[dict[str, Any]]) -> None:
        table = render.table("webhooks", ("id", "url", "events", "created", "by"))
        for h in items:
            table.add_row(
                h["id"],
                escape(h["url"]),
                render.cell(h["events"]),
                render.cell(h["created_at"]),
                render.cell(h["created_by"]),
            )
        out.print(table)

    call(ctx, lambda c: c.webhooks(), show)


@app.command("show")
def webhook_show(ctx: typer.Context, webhook_id: WebhookId) -> None:
    """One webhook."""
    call(ctx, lambda c: c.webhook(webhook_id), lambda h: render.print_key_values(out, h, "webhook"))


@app.command("rm")
def webhook_rm(ctx: typer.Context, webhook_id: WebhookId) -> None:
    """Remove a webhook: its pending deliveries are cancelled; its log stays readable."""
    call(ctx, lambda c: c.delete_webhook(webhook_id), lambda h: render.print_key_values(out, h, "removed"))


@app.command("ping")
def webhook_ping(ctx: typer.Context, webhook_id: WebhookId) -> None:
    """Queue a signed ping delivery (then see it with lsm webhook deliveries)."""
    call(
        ctx,
        lambda c: c.ping_webhook(webhook_id),
        lambda d: out.print(f"queued ping delivery {d['id']}"),
    )


@app.command("deliveries")
def webhook_deliveries(
    ctx: typer.Context,
    webhook_id: WebhookId,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000)] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0)] = 0,
) -> None:
    """The webhook's deliveries, newest first: status, attempts, last answer."""

    def show(items: list[dict[str, Any]]) -> None:
        table = render.table("deliveries", ("id", "event", "status", "attempts", "last", "created", "next"))
        for d in items:
            last = d["last_status_code"] if d["last_status_code"] is not None else d["last_error"]
            table.add_row(
                d["id"],
                d["event"],
                d["status"],
                str(d["attempts"]),
                render.cell(last),
                render.cell(d["created_at"]),
                render.cell(d["next_attempt_at"]),
            )
        out.print(table)

    call(
        ctx,
        lambda c: c.webhook_deliveries(webhook_id, limit=limit, offset=offset),
        show,
    )
