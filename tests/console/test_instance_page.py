"""``InventoryFacade.instance_page``: what the console's instance page shows, from one snapshot,
is exactly what the API's section-by-section reads give, and the event log is read once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime

ROUTER_PORT = str(Path(__file__).resolve().parent.parent.parent / "examples" / "router_port")
LOCAL = RequestContext.local()


def test_the_page_is_the_sections_read_one_by_one_and_reads_the_log_once(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(ROUTER_PORT)
    inventory = engine.facades.inventory
    router = inventory.create_instance(LOCAL, "router", {"mgmt_ip": "10.0.0.1", "name": "r1"})
    engine.processing.drain()
    for name in ("eth0", "eth1", "eth2"):
        inventory.create_instance(LOCAL, "port", {"name": name, "router": router.id})
    engine.processing.drain()
    logs: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "FROM lsm_event" in statement:
            logs.append(statement)

    event.listen(engine.db.read_engine, "before_cursor_execute", seen)
    try:
        page = inventory.instance_page(LOCAL, "router", router.id, owned_limit=2)
    finally:
        event.remove(engine.db.read_engine, "before_cursor_execute", seen)

    assert len(logs) == 1
    assert page.instance == inventory.get_instance(LOCAL, "router", router.id)
    assert page.diagnosis == inventory.diagnose(LOCAL, "router", router.id)
    assert page.log == inventory.instance_log(LOCAL, "router", router.id)
    assert page.resources == inventory.instance_resources(LOCAL, "router", router.id)
    assert page.owned == inventory.owned_instances(LOCAL, "router", router.id, limit=2)
    assert len(page.owned) == 2 and page.log and page.resources  # nothing compared vacuously
