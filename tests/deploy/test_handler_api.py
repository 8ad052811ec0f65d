"""The handler API's contract: one read, then exactly the one call that converges (or none)."""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import lsm
from lsm.deploy.handler import Change, CRUDHandler, DiscoveryHandler, HandlerContext, call
from lsm.deploy.registry import HandlerRegistry, NoHandler
from lsm.model.loader import model_from_module
from lsm.model.meta import Meta, MetaError, check_meta, meta_of, parse_sema


class Doc(lsm.Resource, type="test::Doc", id_attribute="name"):
    name: str
    body: str = ""


class MemoryHandler(CRUDHandler[Doc]):
    """Keeps documents in a dict and records every call, so a test sees what the base did."""

    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []

    def read(self, ctx: HandlerContext, resource: Doc) -> Mapping[str, Any] | None:
        self.calls.append("read")
        return self.store.get(resource.name)

    def create(self, ctx: HandlerContext, resource: Doc) -> None:
        self.calls.append("create")
        self.store[resource.name] = {"name": resource.name, "body": resource.body}

    def update(self, ctx: HandlerContext, resource: Doc, changes: Mapping[str, Change]) -> None:
        self.calls.append("update")
        self.store[resource.name].update({k: c.desired for k, c in changes.items()})

    def delete(self, ctx: HandlerContext, resource: Doc) -> None:
        self.calls.append("delete")
        del self.store[resource.name]


def ctx(tmp_path: Path) -> HandlerContext:
    return HandlerContext("test::Doc[a,name=x]", state_dir=tmp_path)


def test_missing_resource_is_created_with_every_attribute_as_a_change(tmp_path: Path) -> None:
    handler, c = MemoryHandler(), ctx(tmp_path)
    handler.deploy(c, Doc(agent="a", name="x", body="hi"))
    assert handler.calls == ["read", "create"]
    assert c.action == "create"
    assert c.changes == {"name": Change(None, "x"), "body": Change(None, "hi")}
    assert handler.store == {"x": {"name": "x", "body": "hi"}}


def test_a_resource_in_its_desired_state_is_left_alone(tmp_path: Path) -> None:
    handler = MemoryHandler()
    handler.store["x"] = {"name": "x", "body": "hi"}
    c = ctx(tmp_path)
    handler.deploy(c, Doc(agent="a", name="x", body="hi"))
    assert handler.calls == ["read"]
    assert (c.action, c.changes) == ("none", {})


def test_a_drifted_resource_is_updated_with_only_what_differs(tmp_path: Path) -> None:
    handler = MemoryHandler()
    handler.store["x"] = {"name": "x", "body": "old"}
    c = ctx(tmp_path)
    handler.deploy(c, Doc(agent="a", name="x", body="new"))
    assert handler.calls == ["read", "update"]
    assert c.changes == {"body": Change("old", "new")}
    assert handler.store["x"]["body"] == "new"


def test_purged_resources_are_deleted_when_present_and_left_alone_when_gone(tmp_path: Path) -> None:
    handler = MemoryHandler()
    handler.store["x"] = {"name": "x", "body": "hi"}
    first, second = ctx(tmp_path), ctx(tmp_path)
    handler.deploy(first, Doc(agent="a", name="x", purged=True))
    handler.deploy(second, Doc(agent="a", name="x", purged=True))
    assert handler.calls == ["read", "delete", "read"]
    assert (first.action, second.action) == ("delete", "none")
    assert handler.store == {}


@pytest.mark.parametrize("stored", [None, {"name": "x", "body": "old"}])
def test_dry_run_reports_the_change_and_calls_only_read(
    tmp_path: Path, stored: dict[str, Any] | None
) -> None:
    handler = MemoryHandler()
    if stored is not None:
        handler.store["x"] = dict(stored)
    c = ctx(tmp_path)
    handler.deploy(c, Doc(agent="a", name="x", body="new"), dry_run=True)
    assert handler.calls == ["read"]
    assert c.changes["body"] == Change(None if stored is None else "old", "new")
    assert handler.store == ({} if stored is None else {"x": stored})


def test_async_methods_are_awaited_on_a_loop_the_thread_keeps(tmp_path: Path) -> None:
    loops: list[object] = []

    class AsyncHandler(MemoryHandler):
        async def read(self, ctx: HandlerContext, resource: Doc) -> Mapping[str, Any] | None:  # type: ignore[override]  # async: the engine awaits it; the base declares it sync
            import asyncio

            loops.append(asyncio.get_running_loop())
            return self.store.get(resource.name)

    handler = AsyncHandler()
    handler.deploy(ctx(tmp_path), Doc(agent="a", name="x", body="1"))
    handler.deploy(ctx(tmp_path), Doc(agent="a", name="x", body="2"))
    assert handler.store["x"]["body"] == "2"
    assert len(loops) == 2 and loops[0] is loops[1]
    assert call(lambda: 3) == 3


def test_discovery_handler_records_what_it_found(tmp_path: Path) -> None:
    class Finder(DiscoveryHandler[Doc, dict[str, str]]):
        def discover_resources(self, ctx: HandlerContext, resource: Doc) -> Mapping[str, dict[str, str]]:
            return {"test::Doc[a,name=found]": {"body": "x"}}

    c = ctx(tmp_path)
    Finder().deploy(c, Doc(agent="a", name="finder"))
    assert c.action == "discover"
    assert c.discovered == {"test::Doc[a,name=found]": {"body": "x"}}
    assert Finder.resource_type == "test::Doc"


def test_the_model_registers_handlers_and_wins_over_installed_ones() -> None:
    module = types.ModuleType("a_model")

    @lsm.handler(Doc)
    class ModelDocHandler(MemoryHandler):
        pass

    module.ModelDocHandler = ModelDocHandler  # type: ignore[attr-defined]  # a model module made on the fly
    module.HANDLERS = {"test::Other": MemoryHandler}  # type: ignore[attr-defined]  # a model module made on the fly
    module.binding = lsm.Binding(  # type: ignore[attr-defined]  # a model module made on the fly
        type("E", (lsm.ServiceEntity,), {"__annotations__": {"n": str}}), lifecycle="simple"
    )
    model = model_from_module(module)
    assert model.handlers == {"test::Doc": ModelDocHandler, "test::Other": MemoryHandler}
    registry = HandlerRegistry(model.handlers)
    assert isinstance(registry.handler_for("test::Doc"), ModelDocHandler)
    assert registry.handler_for("test::Doc") is registry.handler_for("test::Doc")
    with pytest.raises(NoHandler) as raised:
        registry.handler_for("test::Nope")
    assert raised.value.details["resource_type"] == "test::Nope"


def test_handler_decorator_refuses_what_is_not_a_handler() -> None:
    with pytest.raises(TypeError):
        lsm.handler(Doc)(object)  # type: ignore[arg-type]  # the wrong type is the point


# -- metaparameters --------------------------------------------------------------------------------
def test_meta_is_stored_only_when_set_away_from_the_defaults() -> None:
    plain = Doc(agent="a", name="x")
    assert "meta" not in plain.attributes()
    assert "meta" not in Doc(agent="a", name="x", meta=Meta()).attributes()
    tuned = Doc(agent="a", name="x", meta=Meta(retry=2, sema=("db:2",)))
    assert tuned.attributes()["meta"] == {"retry": 2, "sema": ["db:2"]}
    assert meta_of(tuned.attributes()) == Meta(retry=2, sema=("db:2",))
    assert meta_of(plain.attributes()) == Meta()


@pytest.mark.parametrize(
    ("meta", "field"),
    [
        ({"retry": -2}, "retry"),
        ({"limit": 5.0}, "burst"),
        ({"limit": 0}, "limit"),
        ({"sema": ["db:0"]}, "sema"),
        ({"sema": [":3"]}, "sema"),
        ({"sema": ["db:x"]}, "sema"),
        ({"retry": "many"}, "retry"),
        ({"nonsense": 1}, "nonsense"),
    ],
)
def test_invalid_meta_names_the_field(meta: dict[str, Any], field: str) -> None:
    with pytest.raises(MetaError) as raised:
        meta_of({"meta": meta})
    assert raised.value.field == field


def test_valid_meta_passes_its_rules() -> None:
    check_meta(Meta(retry=-1, limit=2.0, burst=1, sema=("a", "b:3")))
    check_meta(Meta(limit=math.inf))
    assert parse_sema("a") == ("a", 1)
    assert parse_sema("ns:db:4") == ("ns:db", 4)
