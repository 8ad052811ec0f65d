"""``POST /lsm/v1/order`` end to end: a network ordered whole reaches ``up``, or nothing is made."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsm.client import Client
from lsm.errors import InvalidInput
from tests.orders.fixtures import network_order
from tests.waiting import wait_until


def everything(client: Client) -> list[dict[str, Any]]:
    return [i for entity in ("router", "port", "tunnel") for i in client.list_instances(entity)]


def test_routers_ports_and_a_tunnel_ordered_together_reach_up_together(client: Client) -> None:
    order = client.order(network_order())
    assert order["status"] == "in_progress"
    assert [i["ref"] for i in order["items"]] == ["t1", "r1-eth0", "r1-eth1", "r2-eth0", "r1", "r2"]

    wait_until(lambda: client.get_order(order["id"])["status"] != "in_progress", "the order settles")

    done = client.get_order(order["id"])
    assert done["status"] == "done", done
    assert {(i["state"], i["outcome"]) for i in done["items"]} == {("up", "done")}
    by_ref = {i["ref"]: i for i in done["items"]}
    port = client.get_instance("port", by_ref["r1-eth0"]["instance_id"])
    assert port["active_attributes"]["router"] == by_ref["r1"]["instance_id"]
    tunnel = client.get_instance("tunnel", by_ref["t1"]["instance_id"])
    assert tunnel["active_attributes"]["b"] == by_ref["r2-eth0"]["instance_id"]


def test_one_bad_port_attribute_refuses_the_whole_order_and_creates_nothing(client: Client) -> None:
    with pytest.raises(InvalidInput) as refused:
        client.order(network_order(bad_port_mtu="large"))

    (item,) = refused.value.details["items"]
    assert (item["index"], item["ref"], item["action"], item["entity"]) == (2, "r1-eth1", "create", "port")
    assert item["errors"][0]["path"] == "mtu"
    assert everything(client) == []


def test_the_readme_order_file_reaches_done(client: Client) -> None:
    import yaml

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    items = yaml.safe_load(readme.split("```yaml", 1)[1].split("```", 1)[0])["items"]
    order = client.order(items)
    wait_until(lambda: client.get_order(order["id"])["status"] != "in_progress", "the order settles")
    assert client.get_order(order["id"])["status"] == "done"
