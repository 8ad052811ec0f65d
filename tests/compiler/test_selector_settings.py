"""Configurable selectors: settings checked on write, parameters, unions, a selector per compile,
and the selection diagnostics (every compile report, and the ``explain`` dry run)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lsm.errors import InvalidInput, InvalidSetting
from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.compiler.test_selector_completeness import EXPECTED, MODEL, latest_sets, router_with_ports


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("no_such_selector", "no_such_selector"),
        ({"name": "state"}, "state"),  # needs states=[...]
        ({"name": "state", "params": {"states": ["up"], "colour": "red"}}, "state"),
        ({"name": "entity", "params": {"entities": ["nope"]}}, "entity"),
        (["owner_tree", "no_such_selector"], "no_such_selector"),
        ({"nam": "owner_tree"}, "nam"),
        ([], "selector"),
    ],
)
def test_a_selector_setting_that_can_not_be_built_is_refused_and_nothing_changes(
    engine_factory: Callable[..., ApiRuntime], value: Any, named: str
) -> None:
    engine = engine_factory(MODEL)
    with pytest.raises(InvalidSetting) as info:
        engine.facades.environments.set_setting(RequestContext.local(), "selector", value)
    assert info.value.status == 422 and named in info.value.message
    assert engine.context(None).settings.selector == "owner_tree"


@pytest.mark.parametrize(
    "value",
    [
        "nothing",
        {"name": "state", "params": {"states": ["up"]}},
        ["router_only", {"name": "relation_closure"}],
    ],
)
def test_names_parameters_and_unions_are_accepted(
    engine_factory: Callable[..., ApiRuntime], value: Any
) -> None:
    engine = engine_factory(MODEL)
    engine.facades.environments.set_setting(RequestContext.local(), "selector", value)
    assert engine.context(None).settings.selector == value


def test_a_compile_request_names_its_own_selector_and_the_report_says_which(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(MODEL, selector="router_only")
    router, ports = router_with_ports(engine)
    spec = {"name": "state", "params": {"states": ["up"], "entities": ["port"]}}
    out = engine.facades.compiles.request_compile(
        RequestContext.local(), kind="partial", instance_ids=[ports[0]], selector=spec
    )
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(), out.id)
    assert done.status == "success", done.report
    selection = done.report["selection"]
    assert selection["selector"] == spec
    assert selection["requested"] == [ports[0]]
    assert selection["added"] == {
        ports[0]: {router: "owner_tree", ports[1]: "owner_tree", ports[2]: "owner_tree"}
    }
    assert latest_sets(engine) == {router: EXPECTED}
    with pytest.raises(InvalidInput, match="no_such"):
        engine.facades.compiles.request_compile(
            RequestContext.local(), kind="partial", instance_ids=[router], selector="no_such"
        )


def test_the_environment_selector_is_reported_with_what_the_engine_completed(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(MODEL, selector="router_only")
    router, ports = router_with_ports(engine)
    out = engine.facades.compiles.request_compile(
        RequestContext.local(), kind="partial", instance_ids=[router]
    )
    engine.processing.drain()
    selection = engine.facades.compiles.get_compile(RequestContext.local(), out.id).report["selection"]
    assert selection["selector"] == "router_only"
    assert selection["completed"] == sorted(ports)  # the selector returned the router alone
    assert selection["added"] == {router: dict.fromkeys(ports, "owner_tree")}
    assert selection["roots"] == [router]


def test_explain_is_a_dry_run_that_says_why(engine_factory: Callable[..., ApiRuntime]) -> None:
    engine = engine_factory(MODEL)
    router, ports = router_with_ports(engine)
    (other,) = engine.facades.inventory.import_instances(
        RequestContext.local(), "router", "up", [{"mgmt_ip": "10.0.0.2", "name": "r2"}]
    )
    compiles = len(engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000))
    explained = engine.facades.compiles.explain_compile(
        RequestContext.local(),
        instance_ids=[ports[0]],
        selector={"name": "entity", "params": {"entities": ["router"]}},
    )
    assert (
        len(engine.facades.compiles.list_compiles(RequestContext.local(), limit=1000)) == compiles
    )  # nothing queued
    assert explained["added"][ports[0]] == {
        router: "owner_tree",
        ports[1]: "owner_tree",
        ports[2]: "owner_tree",
        other: "custom",
    }
    assert explained["roots"] == sorted([router, other])
    assert explained["selected"]["port"] == sorted(ports)
    names = {s["name"]: s for s in engine.facades.compiles.list_selectors(RequestContext.local())}
    assert {"owner_tree", "relation_closure", "state", "router_only", "nothing"} <= set(names)
    assert names["state"]["parameters"]["states"]["required"] is True
    assert names["state"]["parameters"]["entities"]["required"] is False


def test_merged_requests_compile_with_the_union_of_their_selectors(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory(MODEL, selector="nothing")
    router, ports = router_with_ports(engine)
    (other,) = engine.facades.inventory.import_instances(
        RequestContext.local(), "router", "up", [{"mgmt_ip": "10.0.0.2", "name": "r2"}]
    )
    first = engine.facades.compiles.request_compile(
        RequestContext.local(), kind="partial", instance_ids=[ports[0]]
    )
    engine.facades.compiles.request_compile(
        RequestContext.local(),
        kind="partial",
        instance_ids=[router],
        selector=["router_only", "relation_closure"],
    )
    engine.processing.drain()
    done = engine.facades.compiles.get_compile(RequestContext.local(), first.id)
    assert done.status == "success" and len(done.report["merged"]) == 1, done.report
    assert done.report["selection"]["selector"] == ["nothing", "router_only", "relation_closure"]
    assert done.report["selection"]["roots"] == [router]  # r2 is neither requested nor related
    assert other not in done.report["selection"]["added"].get("*", {})
