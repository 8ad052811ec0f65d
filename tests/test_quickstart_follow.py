"""The quickstart's follower tells a stuck engine from a busy one.

"Nothing moved" used to fire after ``settle`` seconds without a visible step, although the
first compile of a busy machine (it starts the compile processes) can take longer: the demo
then failed on an engine at work. A queued or running compile now counts as movement; the
overall timeout still bounds the wait.
"""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from lsm.client import Client
from lsm.quickstart import Quickstart, Tracked
from lsm.testing import running_engine, served_url

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "router_port"


def test_a_queued_compile_is_work_not_a_stall_and_the_timeout_still_bounds_it(tmp_path: Path) -> None:
    # no worker: the router's validation stays queued, the instance stays in start
    with running_engine(EXAMPLE, f"sqlite:///{tmp_path / 'lsm.db'}", embedded_worker=False) as engine:
        with served_url(engine) as url, Client(url) as client:
            router = client.create_instance("router", {"name": "r1", "mgmt_ip": "10.0.0.1"})
            demo = Quickstart(client, Console(file=io.StringIO()), timeout=1.5, settle=0.3, poll=0.05)
            demo.follow([Tracked("router", "router r1", router["id"])], "up")
            assert demo.failures == ["the instances did not settle within 1.5 s"]
            assert demo.compiling()


def test_with_nothing_queued_a_standstill_is_reported_after_settle(tmp_path: Path) -> None:
    with running_engine(EXAMPLE, f"sqlite:///{tmp_path / 'lsm.db'}", embedded_worker=False) as engine:
        with served_url(engine) as url, Client(url) as client:
            router = client.create_instance("router", {"name": "r1", "mgmt_ip": "10.0.0.1"})
            # run what is queued, once: the router is exported and waits for a deploy that no
            # agent will make, with nothing left to compile
            engine.processing.drain()
            demo = Quickstart(client, Console(file=io.StringIO()), timeout=30, settle=0.3, poll=0.05)
            demo.follow([Tracked("router", "router r1", router["id"])], "up")
            assert not demo.compiling()
            assert len(demo.failures) == 1 and demo.failures[0].startswith("nothing moved for 0.3 s")
