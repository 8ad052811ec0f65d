"""``lsm expert state|attributes|destroy``: the way out of a stuck instance, for admins.

Each command is refused (``expert_mode_off``, naming the setting) until an admin turns the
environment's ``expert_mode`` setting on (``lsm environment set expert_mode true``), and each needs a
``--reason``, kept on the instance's event log and in the audit trail (``GET /api/v1/audit``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from lsm.cli.calls import call
from lsm.cli.instance_views import show_instance
from lsm.cli.params import CurrentVersion, Entity, Ref

app = typer.Typer(
    help="Expert mode (admins, setting expert_mode on): force a state, write attribute sets, destroy.",
    no_args_is_help=True,
)

Reason = Annotated[str, typer.Option("--reason", "-r", help="Why (required): kept in the log and the audit.")]
SET_NAMES = ("candidate", "active", "rollback")


def _set_option(name: str) -> Any:
    return typer.Option(f"--{name}", help=f"The new {name} set as a JSON object, or null to empty it.")


def _parse_set(name: str, text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"not valid JSON: {exc}", param_hint=f"--{name}") from None
    if value is not None and not isinstance(value, dict):
        raise typer.BadParameter("must be a JSON object or null", param_hint=f"--{name}")
    return value


@app.command("state")
def expert_state(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    state: Annotated[str, typer.Argument(help="Any state of the instance's lifecycle.")],
    current_version: CurrentVersion,
    reason: Reason,
) -> None:
    """Force an instance into a state, without a transfer, validation or operation."""
    call(
        ctx,
        lambda c: c.expert_state(entity, ref, current_version=current_version, state=state, reason=reason),
        show_instance,
    )


@app.command("attributes")
def expert_attributes(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    current_version: CurrentVersion,
    reason: Reason,
    candidate: Annotated[str | None, _set_option("candidate")] = None,
    active: Annotated[str | None, _set_option("active")] = None,
    rollback: Annotated[str | None, _set_option("rollback")] = None,
) -> None:
    """Replace the attribute sets given (checked against the entity's schema); the others stay."""
    given = {"candidate": candidate, "active": active, "rollback": rollback}
    sets = {name: _parse_set(name, text) for name, text in given.items() if text is not None}
    if not sets:
        raise typer.BadParameter("give at least one of --candidate, --active, --rollback")
    call(
        ctx,
        lambda c: c.expert_attributes(entity, ref, current_version=current_version, reason=reason, **sets),
        show_instance,
    )


@app.command("destroy")
def expert_destroy(
    ctx: typer.Context,
    entity: Entity,
    ref: Ref,
    current_version: CurrentVersion,
    reason: Reason,
    purge_resources: Annotated[
        bool,
        typer.Option(
            "--purge-resources/--leave-resources",
            help="Take its resources out of the desired state now, or leave them there until an "
            "export covers its tree. No handler runs either way.",
        ),
    ],
) -> None:
    """Terminate an instance at once, without its lifecycle or any handler."""
    call(
        ctx,
        lambda c: c.expert_destroy(
            entity, ref, current_version=current_version, reason=reason, purge_resources=purge_resources
        ),
        show_instance,
    )
