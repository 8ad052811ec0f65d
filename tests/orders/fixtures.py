"""An engine over ``examples/tunnel`` that validates, compiles AND deploys on its own, served.

The example's handlers write one JSON file per resource under the state directory, so an order
reaches ``up`` with nothing else running; ``relation_closure`` brings a tunnel's ports and
routers into its compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsm.client import Client
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "tunnel")


def network_order(*, bad_port_mtu: Any = 1500) -> list[dict[str, Any]]:
    """Two routers; ``r1`` with two ports, ``r2`` with one; a tunnel from ``r1``'s ``eth0`` to
    ``r2``'s, every relation a local ``$ref``, listed children first (the order sorts them)."""
    return [
        {"action": "create", "entity": "tunnel", "ref": "t1",
         "attributes": {"name": "t1", "a": {"$ref": "r1-eth0"}, "b": {"$ref": "r2-eth0"}, "key": "k1"}},
        {"action": "create", "entity": "port", "ref": "r1-eth0",
         "attributes": {"name": "eth0", "router": {"$ref": "r1"}}},
        {"action": "create", "entity": "port", "ref": "r1-eth1",
         "attributes": {"name": "eth1", "router": {"$ref": "r1"}, "mtu": bad_port_mtu}},
        {"action": "create", "entity": "port", "ref": "r2-eth0",
         "attributes": {"name": "eth0", "router": {"$ref": "r2"}}},
        {"action": "create", "entity": "router", "ref": "r1",
         "attributes": {"mgmt_ip": "10.0.0.1", "name": "r1"}},
        {"action": "create", "entity": "router", "ref": "r2",
         "attributes": {"mgmt_ip": "10.0.0.2", "name": "r2"}},
    ]  # fmt: skip


@pytest.fixture
def network(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> ApiRuntime:
    return engine_factory(
        EXAMPLE,
        embedded_worker=True,
        embedded_agent=True,
        config={"state_dir": str(tmp_path / "state")},
        selector="relation_closure",
    )


@pytest.fixture
def network_url(network: ApiRuntime) -> Iterator[str]:
    with served_url(network) as url:
        yield url


@pytest.fixture
def client(network_url: str) -> Iterator[Client]:
    with Client(network_url) as c:
        yield c
