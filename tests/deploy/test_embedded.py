"""``lsm server``'s shape: the compile worker and the deploy agent in one service loop, woken by
each other, take an order to ``up`` with nobody draining anything."""

from __future__ import annotations

import time
from pathlib import Path

from lsm.testing import RequestContext, running_engine

LOCAL = RequestContext.local()


def test_an_order_reaches_up_with_the_embedded_worker_and_agent(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    with running_engine(
        "tests.deploy.file_model",
        f"sqlite:///{tmp_path / 'lsm.db'}",
        embedded_agent=True,
        state_dir=state_dir,
    ) as engine:
        inventory = engine.facades.inventory
        router = inventory.create_instance(LOCAL, "router", {"name": "edge"})
        port = inventory.create_instance(LOCAL, "port", {"name": "eth0", "router": router.id})
        deadline = time.monotonic() + 60
        while {
            inventory.get_instance(LOCAL, e, i.id).state for e, i in (("router", router), ("port", port))
        } != {"up"}:
            assert time.monotonic() < deadline, "the order did not reach up"
            time.sleep(0.05)
        assert (state_dir / "ports/edge/eth0.conf").read_text() == "mtu=1500"
