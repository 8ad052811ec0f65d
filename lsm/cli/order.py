"""``lsm order apply FILE [--wait] | show ID``: many changes across entities in one order.

The file (YAML or JSON) holds ``items:`` (or is the list itself); each item is an order item of
docs/api.md (``action``, ``entity``, ``ref``, ``instance``, ``attributes``, ...). The order is
applied whole or refused whole: a refusal lists every refused item (index, local name, rule)
and exits 1. With ``--wait`` the command follows the order (``lsm.cli.wait``) and exits 0 when
every item reached its target state, 1 when one failed (its diagnosis printed), 3 on time-out.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import typer
from rich.markup import escape

from lsm.cli.calls import connected, print_json
from lsm.cli.console import err, out
from lsm.cli.instance import read_data_file
from lsm.cli.options import shared
from lsm.cli.params import Timeout, Wait
from lsm.cli.wait import Standing, follow, report, stream_client

app = typer.Typer(help="Orders: many changes across entities, all or nothing.", no_args_is_help=True)


@app.command("apply")
def order_apply(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="YAML or JSON file with `items:`; - for stdin.")],
    wait: Wait = False,
    timeout: Timeout = 600.0,
    idempotency_key: Annotated[
        str | None,
        typer.Option("--idempotency-key", help="Your key for this order: running it again applies nothing."),
    ] = None,
) -> None:
    """Apply an order: every item in one transaction, or none."""
    data = read_data_file(file)
    items = data.get("items") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise typer.BadParameter(f"{file} must hold a non-empty list of items (`items:`)", param_hint="FILE")
    key = idempotency_key or uuid.uuid4().hex
    with connected(ctx) as client:
        order = client.order(items, idempotency_key=key)
        if wait:
            code, order = wait_for_order(ctx, client, order, timeout)
            finish(ctx, order)
            raise typer.Exit(code)
    finish(ctx, order)


@app.command("show")
def order_show(ctx: typer.Context, order_id: Annotated[str, typer.Argument(help="The order's id.")]) -> None:
    """An order: its status and each item's instance, state and outcome."""
    with connected(ctx) as client:
        order = client.get_order(order_id)
    finish(ctx, order)


def wait_for_order(
    ctx: typer.Context, client: Any, order: dict[str, Any], timeout: float
) -> tuple[int, dict[str, Any]]:
    """Follow ``order`` until it is done or failed, or ``timeout``; the exit code and the order."""
    latest = [order]

    def check() -> Standing:
        latest[0] = client.get_order(order["id"])
        items = latest[0]["items"]
        failed = [
            f"item {i['index']} ({i.get('ref') or i['entity']}): {i.get('diagnosis') or i['state']}"
            for i in items
            if i["outcome"] == "failed"
        ]
        return Standing(sum(i["outcome"] == "done" for i in items), len(items), failed)

    ids = {str(i["instance_id"]) for i in order["items"]}
    code, standing = follow(
        lambda: stream_client(ctx), ids, check, timeout=timeout, what=f"order {order['id'][:8]}"
    )
    report(standing, code, timeout)
    return code, latest[0]


def finish(ctx: typer.Context, order: dict[str, Any]) -> None:
    """Print the order: raw with ``--json``/``-o``, else a table of its items."""
    if shared(ctx).json:
        print_json(order)
        return
    from rich.table import Table

    table = Table(title=f"order {order['id']}: {order['status']}")
    for column in ("#", "ref", "action", "entity", "instance", "state", "target", "outcome"):
        table.add_column(column)
    for i in order["items"]:
        table.add_row(
            str(i["index"]),
            escape(i.get("ref") or ""),
            i["action"],
            escape(i["entity"]),
            i["instance_id"],
            escape(str(i.get("state"))),
            escape(i["wait_for"]),
            i["outcome"],
        )
    if not out.is_terminal:  # one item per line on stdout; the order itself is said on stderr
        err.print(f"order {order['id']}: {order['status']}")
    out.print(table)
