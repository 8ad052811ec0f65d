"""std::Null costs nothing; every bundled handler is found through the lsm.handlers entry points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.config import ConfigFileHandler
from lsm_handlers.files import FileHandler
from lsm_handlers.http import HttpDocumentHandler
from lsm_handlers.linux import InterfaceHandler, NamespaceHandler, VethHandler
from lsm_handlers.null import Null, NullHandler

from lsm.deploy.handler import HandlerContext
from lsm.deploy.materialize import StoredResource, materialize
from lsm.deploy.registry import HandlerRegistry, handler_problems
from tests.handlers import run

BUNDLED: dict[str, type[Any]] = {
    "std::Null": NullHandler,
    "std::File": FileHandler,
    "std::HttpDocument": HttpDocumentHandler,
    "linux::Namespace": NamespaceHandler,
    "linux::Interface": InterfaceHandler,
    "linux::Veth": VethHandler,
}


@pytest.mark.parametrize("resource_type", sorted(BUNDLED))
def test_each_bundled_type_resolves_through_the_entry_points(resource_type: str) -> None:
    registry = HandlerRegistry()
    assert registry.handler_class(resource_type) is BUNDLED[resource_type]
    assert isinstance(registry.handler_for(resource_type), BUNDLED[resource_type])


def test_no_bundled_entry_point_is_broken() -> None:
    assert handler_problems() == {}
    assert set(BUNDLED) <= set(HandlerRegistry().known_types())


def test_a_model_handler_overrides_a_bundled_one() -> None:
    registry = HandlerRegistry({"std::File": ConfigFileHandler})
    assert registry.handler_class("std::File") is ConfigFileHandler


def test_null_is_always_in_its_desired_state(tmp_path: Path) -> None:
    for resource in (Null(agent="a", name="n", data={"x": 1}), Null(agent="a", name="n", purged=True)):
        ctx = run(NullHandler(), resource, tmp_path, dry_run=False)
        assert ctx.action == "none" and ctx.changes == {} and ctx.logs == []
    assert list(tmp_path.iterdir()) == []


def test_null_gets_a_stored_resource_and_never_reads(tmp_path: Path) -> None:
    class Counting(NullHandler):
        reads = 0

        def read(self, ctx: HandlerContext, resource: Any) -> Any:
            type(self).reads += 1
            return super().read(ctx, resource)

    data = Null(agent="a", name="n").to_data()
    target = materialize(Counting(), data.id, data.attributes)
    assert isinstance(target, StoredResource)
    Counting().deploy(HandlerContext(data.id, state_dir=tmp_path), target)
    assert Counting.reads == 0
    assert NullHandler().read(HandlerContext(data.id, state_dir=tmp_path), target) == {
        "name": "n",
        "data": None,
    }
