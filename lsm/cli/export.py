"""``lsm export MODEL``: compile a model that declares resource sets and store it as a version.

Why: the seeds' partial compiles are driven by ``inmanta export [--partial]
[--delete-resource-set NAME]... [--soft-delete]`` on models trimmed by hand or written by a
generator. Here such a model is a Python file (or package, or module path) that builds
``lsm.ResourceSet`` objects and ``lsm.shared`` resources as it loads
(``lsm.model.resource_set``); this command loads it in this process and sends what it declares
in one ``PUT /api/v1/desired_state`` (``Client.export_desired_state``). The server checks the
export rules and writes nothing when one is broken; the answer names the rule, the resources
and the sets.

Only what the command uses is imported, and only when it runs (the model layer, the client):
a partial export of one set is a short-lived process whose cost is mostly its imports.

Example::

    lsm export examples/resource_sets/full.py
    lsm export examples/resource_sets/partial.py --partial
    lsm export examples/resource_sets/partial.py --partial --delete-resource-set network-7
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from lsm.cli.calls import call
from lsm.cli.console import out
from lsm.cli.errors import errors_reported

if TYPE_CHECKING:
    from lsm.client import Client
    from lsm.model.resource import ResourceData


def export(
    ctx: typer.Context,
    model: Annotated[
        str, typer.Argument(help="The model: a .py file, a package directory or a module path.")
    ],
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Replace only the sets the model declares (an empty set deletes it); keep the others.",
        ),
    ] = False,
    delete_resource_set: Annotated[
        list[str] | None,
        typer.Option(
            "--delete-resource-set",
            metavar="NAME",
            help="Delete this resource set (repeatable; with --partial only).",
        ),
    ] = None,
    soft_delete: Annotated[
        bool,
        typer.Option(
            "--soft-delete",
            help="Drop, silently, the deletion of a set that the model still fills (with --partial only).",
        ),
    ] = False,
) -> None:
    """Compile MODEL's resource sets and store them as a full (or --partial) desired-state version."""
    deleted = list(delete_resource_set or [])
    if not partial and (deleted or soft_delete):
        flag = "--delete-resource-set" if deleted else "--soft-delete"
        raise typer.BadParameter(f"{flag} needs --partial (a full export replaces every set)")
    with errors_reported():
        from lsm.model.resource_set import declared_model

        declared = declared_model(model)
    sets = {name: [_wire(r) for r in resources] for name, resources in declared.sets.items()}
    shared = [_wire(r) for r in declared.shared]

    def request(client: Client) -> Any:
        return client.export_desired_state(
            sets, shared, partial=partial, deleted_sets=deleted, soft_delete=soft_delete
        )

    def show(info: dict[str, Any]) -> None:
        replaced, removed = info["sets_replaced"], info["sets_deleted"]
        out.print(
            f"desired state {info['version']} ({info['kind']}): {len(sets)} set(s) and "
            f"{len(shared)} shared resource(s) exported; {len(replaced)} set(s) replaced, "
            f"{len(removed)} deleted; {info['resource_count']} resource(s) in the version"
        )
        if removed:
            out.print("deleted: " + ", ".join(removed))

    call(ctx, request, show)


def _wire(resource: ResourceData) -> dict[str, Any]:
    return {"id": resource.id, "attributes": resource.attributes, "requires": list(resource.requires)}
