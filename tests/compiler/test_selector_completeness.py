"""Completeness (docs/semantics.md §3): a set is only ever replaced from its complete tree.

Whatever a selector returns, the engine compiles every tree it touches whole, and never deletes
the set of a live root that the selector left out. These scenarios lost desired state silently
before the engine owned completeness: the compile succeeded and the ports' resources, or the
whole router set, left the desired state.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime

MODEL = "tests.compiler.router_port_partial_model"


def router_with_ports(engine: ApiRuntime, ports: int = 3) -> tuple[str, list[str]]:
    """A router with ``ports`` live ports, all up, and a first (full) desired-state version."""
    (router,) = engine.facades.inventory.import_instances(
        RequestContext.local(), "router", "up", [{"mgmt_ip": "10.0.0.1", "name": "r1"}]
    )
    port_ids = engine.facades.inventory.import_instances(
        RequestContext.local(),
        "port",
        "up",
        [{"router": router, "name": f"eth{i}", "mtu": 1500} for i in range(ports)],
    )
    done = engine.facades.compiles.request_compile(RequestContext.local(), kind="full")
    engine.processing.drain()
    assert engine.facades.compiles.get_compile(RequestContext.local(), done.id).status == "success"
    return router, port_ids


def latest_sets(engine: ApiRuntime) -> dict[str, list[str]]:
    latest = engine.facades.desired_state.list_desired_states(RequestContext.local())[0].version
    sets: dict[str, list[str]] = engine.facades.desired_state.desired_state(
        RequestContext.local(), latest
    ).sets
    return sets


def partial(engine: ApiRuntime, ids: list[str]) -> dict[str, object]:
    out = engine.facades.compiles.request_compile(RequestContext.local(), kind="partial", instance_ids=ids)
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(), out.id)
    assert done.status == "success", done.report
    return done.report


EXPECTED = [
    "net::Interface[10.0.0.1,name=eth0]",
    "net::Interface[10.0.0.1,name=eth1]",
    "net::Interface[10.0.0.1,name=eth2]",
    "net::Router[10.0.0.1,name=r1]",
]


@pytest.mark.parametrize("requested", ["router", "port"])
def test_a_selector_returning_only_the_router_keeps_its_live_ports_in_the_set(
    engine_factory: Callable[..., ApiRuntime], requested: str
) -> None:
    engine = engine_factory(MODEL, selector="router_only")
    router, ports = router_with_ports(engine)
    assert latest_sets(engine) == {router: EXPECTED}
    report = partial(engine, [router] if requested == "router" else [ports[1]])
    assert latest_sets(engine) == {router: EXPECTED}
    assert report["selected"] == {"router": [router], "port": sorted(ports)}


def test_a_selector_returning_nothing_never_deletes_the_set_of_a_requested_live_root(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(MODEL, selector="nothing")
    router, _ = router_with_ports(engine)
    report = partial(engine, [router])
    assert latest_sets(engine) == {router: EXPECTED}
    assert report["sets_deleted"] == []
