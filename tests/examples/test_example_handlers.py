"""Every example deploys to something real with no set-up and no root: the config-file handler.

Each example's ``HANDLERS`` maps every resource type it produces to ``ConfigFileHandler``;
deploying a compile's resources (as the engine will: the registry over the model's handlers,
``materialize``, ``deploy``) writes one JSON file per resource under the state directory, a
second deploy writes nothing, and purging removes the files. ``HANDLERS`` changes nothing in
what the examples compile.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.config import ConfigFileHandler, config_path

from lsm.deploy.registry import HandlerRegistry
from lsm.model import Model, Resource, load_model, refine
from tests.handlers import run
from tests.model import inst, uid

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: example -> instances of a small compile
INPUTS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "networks": {"network": [inst(1, {"name": "net-0", "hosts": 2})]},
    "router_port": {
        "router": [inst(1, {"mgmt_ip": "10.0.0.1", "name": "r1"})],
        "port": [inst(11, {"name": "eth0", "router": uid(1), "mtu": 1500, "vlan": None})],
    },
    "tunnel": {
        "router": [inst(n, {"mgmt_ip": f"10.0.0.{n}", "name": f"r{n}"}) for n in (1, 2)],
        "port": [inst(10 + n, {"name": "eth0", "router": uid(n), "mtu": 1500}) for n in (1, 2)],
        "tunnel": [inst(21, {"name": "t1", "a": uid(11), "b": uid(12), "key": "k"})],
    },
    "tunnel_lsm": {
        "port": [inst(n, {"name": f"p{n}"}) for n in (1, 2)],
        "tunnel": [inst(21, {"tunnel_id": "t1", "ports": [uid(1), uid(2)]})],
    },
}


def resources(model: Model, instances: dict[str, list[dict[str, Any]]], **kw: Any) -> list[Resource]:
    result = refine(model, instances, **kw)
    return [r for rs in result.sets.values() for r in rs] + list(result.shared)


@pytest.mark.parametrize("example", sorted(INPUTS))
def test_every_resource_type_of_the_example_has_the_config_file_handler(example: str) -> None:
    model = load_model(EXAMPLES / example)
    produced = {type(r).resource_type for r in resources(model, INPUTS[example])}
    assert produced <= set(model.handlers)
    registry = HandlerRegistry(model.handlers)
    assert {registry.handler_class(t) for t in produced} == {ConfigFileHandler}


@pytest.mark.parametrize("example", sorted(INPUTS))
def test_handlers_do_not_change_what_the_example_compiles(example: str) -> None:
    model = load_model(EXAMPLES / example)
    bare = dataclasses.replace(model, handlers={})
    assert [r.to_data() for r in resources(model, INPUTS[example])] == [
        r.to_data() for r in resources(bare, INPUTS[example])
    ]


@pytest.mark.parametrize("example", sorted(INPUTS))
def test_the_example_deploys_to_files_and_purges_them(example: str, tmp_path: Path) -> None:
    model = load_model(EXAMPLES / example)
    registry = HandlerRegistry(model.handlers)
    produced = resources(model, INPUTS[example])
    for r in produced:
        assert run(registry.handler_for(r.resource_type), r, tmp_path).action == "create"
    files = {config_path(tmp_path, r.id, r.agent) for r in produced}
    assert all(f.is_file() for f in files) and len(files) == len(produced)
    assert {run(registry.handler_for(r.resource_type), r, tmp_path).action for r in produced} == {"none"}
    for r in produced:
        run(registry.handler_for(r.resource_type), r.model_copy(update={"purged": True}), tmp_path)
    assert not any(f.exists() for f in files)
