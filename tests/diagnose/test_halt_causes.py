"""``diagnose`` names the brake: ``halted`` for an instance whose compile or deploy a halt holds,
``agent_paused`` for one whose resources wait for a paused agent. Through the real app, both
backends; compiles and deploys run when the test drains the loop.
"""

from __future__ import annotations

from typing import Any

import httpx

from lsm.runtime.wiring import ApiRuntime
from tests.api.test_halt_routes import ENV, post
from tests.diagnose.stuck_model import router_device
from tests.diagnose.test_causes import clock, diagnose, engine, http, kinds, order

__all__ = ["engine", "http"]


def brake(http: httpx.Client, action: str) -> dict[str, Any]:
    return post(http, f"{ENV}/{action}")


def test_a_queued_compile_of_a_halted_environment_is_diagnosed_halted(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    halted = brake(http, "halt")
    router = order(http, "router", {"name": "r1"})
    engine.processing.drain()

    body = diagnose(http, "router", router)
    assert body["state"] == "start"
    assert kinds(body) == ["pending_compile", "halted"]
    cause = body["cause"][-1]
    assert cause["subject"] == {"type": "environment", "id": halted["id"]}
    assert cause["details"] == {"halted_by": "local"}
    assert cause["message"] == (
        f"the environment is halted since {clock(halted['halted_at'])} by local: no compile runs and no "
        "agent deploys until it is resumed (`lsm environment resume`)"
    )
    assert body["summary"].endswith("because " + cause["message"])

    brake(http, "resume")
    engine.processing.drain()
    assert kinds(diagnose(http, "router", router)) == ["none"]


def test_resources_waiting_for_a_paused_agent_or_a_halt_are_diagnosed_so(
    engine: ApiRuntime, http: httpx.Client
) -> None:
    paused = brake(http, "agents/routers/pause")["paused_agents"][0]
    router = order(http, "router", {"name": "r1"})
    engine.processing.drain()

    body = diagnose(http, "router", router)
    assert body["state"] == "creating"
    assert kinds(body) == ["deploying", "agent_paused"]
    waiting, cause = body["cause"]
    assert waiting["subject"] == {"type": "resource", "id": router_device("r1")}
    assert cause["subject"] == {"type": "agent", "id": "routers"}
    assert cause["details"] == {"paused_by": "local", "stay_paused": True}
    assert cause["message"] == (
        f"agent routers is paused since {clock(paused['paused_at'])} by local: its resources wait "
        "until it is unpaused (`lsm agent unpause routers`)"
    )

    brake(http, "halt")  # the halt holds every agent: it is the cause now
    assert kinds(diagnose(http, "router", router)) == ["deploying", "halted"]
    brake(http, "resume")  # a pause of its own outlives the resume
    engine.processing.drain()
    assert kinds(diagnose(http, "router", router)) == ["deploying", "agent_paused"]

    brake(http, "agents/routers/unpause")
    engine.processing.drain()
    body = diagnose(http, "router", router)
    assert body["state"] == "up" and kinds(body) == ["none"]
