"""``lsm order apply FILE --wait`` and ``lsm instance create|delete --wait``: the CI contract.

Exit 0 when every item reached its target state, 1 when one failed (its diagnosis printed), 3
on time-out, 2 on a usage error; ``--json`` prints the final order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner, Result

from lsm.cli import app
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.orders.fixtures import EXAMPLE, network_order


def lsm(url: str, *args: str) -> Result:
    return CliRunner().invoke(app, [*args, "--url", url], env={"COLUMNS": "200"})


def order_file(tmp_path: Path, items: list[dict[str, Any]]) -> str:
    path = tmp_path / "order.yaml"
    path.write_text(yaml.safe_dump({"items": items}))
    return str(path)


def test_apply_wait_exits_0_when_every_item_is_up_and_json_prints_the_final_order(
    network_url: str, tmp_path: Path
) -> None:
    result = lsm(network_url, "order", "apply", order_file(tmp_path, network_order()), "--wait", "--json")

    assert result.exit_code == 0, result.output
    order = json.loads(result.stdout)
    assert order["status"] == "done"
    assert {i["outcome"] for i in order["items"]} == {"done"}


def test_apply_wait_exits_1_and_prints_the_diagnosis_when_an_item_fails(
    network_url: str, tmp_path: Path
) -> None:
    items = network_order()
    items[0]["attributes"]["b"] = {"$ref": "r1-eth1"}  # both ends on r1: the model refuses the tunnel

    result = lsm(network_url, "order", "apply", order_file(tmp_path, items), "--wait", "--json")

    assert result.exit_code == 1, result.output
    order = json.loads(result.stdout)
    assert (order["status"], order["failed"]) == ("failed", [0])
    assert order["items"][0]["state"] == "rejected"
    assert "both ends are on router r1" in order["items"][0]["diagnosis"]
    assert "item 0 (t1)" in result.stderr and "both ends are on router r1" in result.stderr


def test_apply_wait_exits_3_on_time_out(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> None:
    engine = engine_factory(EXAMPLE, selector="relation_closure")  # no worker: nothing moves on
    with served_url(engine) as url:
        result = lsm(
            url, "order", "apply", order_file(tmp_path, network_order()), "--wait", "--timeout", "0.5"
        )

    assert result.exit_code == 3, result.output
    assert "timed out after 0.5 s: 0 of 6" in result.stderr
    assert "in_progress" in result.stderr  # the order's status; stdout holds its items, one per line
    assert result.stdout.count("\tpending\n") == 6


def test_a_file_without_items_is_a_usage_error(network_url: str, tmp_path: Path) -> None:
    path = tmp_path / "order.yaml"
    path.write_text("entity: router\n")
    result = lsm(network_url, "order", "apply", str(path), "--wait")
    assert result.exit_code == 2
    assert "non-empty list of items" in result.output


def test_a_refused_order_exits_1_listing_the_item_and_its_rule(network_url: str, tmp_path: Path) -> None:
    items = network_order()
    items[1]["attributes"]["router"] = {"$ref": "r9"}
    result = lsm(network_url, "order", "apply", order_file(tmp_path, items))
    assert result.exit_code == 1
    assert "dangling_ref" in result.output and "r1-eth0" in result.output


def test_instance_create_and_delete_wait_for_up_and_terminated(network_url: str) -> None:
    created = lsm(
        network_url,
        "instance",
        "create",
        "router",
        "-a",
        "mgmt_ip=10.0.0.9",
        "-a",
        "name=r9",
        "--wait",
        "--json",
    )
    assert created.exit_code == 0, created.output
    router = json.loads(created.stdout)
    assert router["state"] == "up"

    deleted = lsm(
        network_url,
        "instance",
        "delete",
        "router",
        router["id"],
        "-v",
        str(router["version"]),
        "--wait",
        "--json",
    )
    assert deleted.exit_code == 0, deleted.output
    assert json.loads(deleted.stdout)["state"] == "terminated"
