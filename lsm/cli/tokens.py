"""``lsm token create|list|revoke``: API tokens (admins); ``create --admin`` writes the first
admin token straight into the database, on the server's machine."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from lsm.cli import render
from lsm.cli.calls import call, print_json
from lsm.cli.console import err, out
from lsm.cli.errors import errors_reported
from lsm.cli.options import shared

app = typer.Typer(help="API tokens (admins): create, list, revoke.", no_args_is_help=True)


def _parse_roles(roles: list[str] | None) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in roles or []:
        env, sep, role = item.rpartition("=")
        if not sep or not env.strip() or not role.strip():
            raise typer.BadParameter(f"expected environment=role, got {item!r}", param_hint="--role")
        parsed[env.strip()] = role.strip()
    return parsed


def _show_token(data: dict[str, Any]) -> None:
    render.print_key_values(out, {k: v for k, v in data.items() if k != "token"}, "token")
    if data.get("token"):
        err.print("[bold]the token (shown once, store it now):[/]")
        typer.echo(data["token"])


@app.command("create")
def token_create(
    ctx: typer.Context,
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
) -> None:
    """Create a token and print it once."""
    seconds = int(expires_in_days * 86400)
    if not admin:
        roles = _parse_roles(role)
        if not roles:
            raise typer.BadParameter("give at least one --role environment=role (or --admin)")
        call(ctx, lambda c: c.create_token(name, roles, expires_in=seconds), _show_token, environment=False)
        return
    if role:
        raise typer.BadParameter(
            "--admin makes an admin over every environment: no --role", param_hint="--role"
        )
    from datetime import UTC, datetime, timedelta

    from lsm.runtime.config import load_config
    from lsm.store import audit
    from lsm.store.auth import tokens
    from lsm.store.database import Database

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
    if shared(ctx).json:
        print_json({**data, "token": secret})
    else:
        _show_token({**data, "token": secret})


@app.command("list")
def token_list(ctx: typer.Context) -> None:
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

    call(ctx, lambda c: c.tokens(), show, environment=False)


@app.command("revoke")
def token_revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(help="The token's id (lsm token list).")],
) -> None:
    """Revoke a token: refused from its next request on."""
    call(
        ctx,
        lambda c: c.revoke_token(token_id),
        lambda t: render.print_key_values(out, t, "revoked"),
        environment=False,
    )
