"""Selectors over an inventory written by the real orchestration (owner_id and relation rows).

The other selection tests write rows directly; this one checks that what the orchestration
actually stores (``owner_id``, ``lsm_instance_ref``, entity = binding name) is what the
selectors walk.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lsm_selectors.relation_closure import RelationClosureSelector

from lsm.facade import RequestContext
from lsm.runtime.config import ServerConfig
from lsm.runtime.wiring import ApiRuntime, build_api
from lsm.selection import (
    AttributeSetName,
    InstanceRecord,
    InventoryView,
    OwnerTreeSelector,
    build_selector,
    run_selector,
)
from lsm.store.database import Database

MODEL = """
from lsm.catalog import Binding, Ref, ServiceEntity


class Router(ServiceEntity):
    name: str


class Port(ServiceEntity):
    name: str
    router: Ref[Router]


class Tunnel(ServiceEntity):
    name: str
    a: Ref[Port]
    b: Ref[Port]


router = Binding(Router, name="router", identity="name")
port = Binding(Port, name="port", owner=router, relation_to_owner="router")
tunnel = Binding(Tunnel, name="tunnel")
"""


@pytest.fixture
def engine(db: Database, tmp_path: Path) -> Iterator[ApiRuntime]:
    model = tmp_path / "tunnel_model.py"
    model.write_text(MODEL)
    engine = build_api(ServerConfig(model=str(model), embedded_worker=False), db=db)
    engine.start()
    try:
        yield engine
    finally:
        engine.stop()  # the db fixture disposes of the database


def candidate(record: InstanceRecord) -> AttributeSetName:
    return "candidate"  # freshly created instances only have a candidate set


def test_owner_tree_and_relation_closure_over_orchestrated_instances(
    engine: ApiRuntime, db: Database
) -> None:
    def create(entity: str, **attributes: str) -> str:
        return engine.facades.inventory.create_instance(RequestContext.local(), entity, attributes).id

    r1, r2, r3 = (create("router", name=n) for n in ("r1", "r2", "r3"))
    p1a, p1b = create("port", name="a", router=r1), create("port", name="b", router=r1)
    p2a = create("port", name="a", router=r2)
    p3a = create("port", name="a", router=r3)
    tunnel = create("tunnel", name="t", a=p1a, b=p2a)
    ctx = engine.context(None)
    with db.read() as session:
        view = InventoryView(session, ctx.env_id, ctx.catalog, attribute_set=candidate)
        tree = OwnerTreeSelector(view, ctx.catalog)
        assert run_selector(tree, [p1b]) == {"router": [r1], "port": sorted([p1a, p1b]), "tunnel": []}
        assert tree.roots() == [r1]
        assert view.attribute(p1a, "router") == r1

        closure = build_selector("relation_closure", view, ctx.catalog, model=ctx.model)
        assert isinstance(closure, RelationClosureSelector)
        assert run_selector(closure, [tunnel]) == {
            "router": sorted([r1, r2]),
            "port": sorted([p1a, p1b, p2a]),
            "tunnel": [tunnel],
        }
        assert closure.roots() == sorted([r1, r2, tunnel])
        assert p3a not in view.children(r1) and r3 not in closure.roots()
