"""A model whose resource requires another tree's resource is refused by the instance's
validation compile, end to end, naming export rule 6 (docs/semantics.md §4): the instance is
rejected, its event line and its validation's report name the rule, both sets and the required
id. Real engine (compile worker in its loop) on every backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.waiting import wait_until

LOCAL = RequestContext.local()

#: a server's port requires its switch's resource: another resource set (rule 6)
MODEL = """
from collections.abc import Iterator

import lsm


class Switch(lsm.ServiceEntity):
    name: str


class Server(lsm.ServiceEntity):
    name: str
    switch: lsm.Ref[Switch]


switch = lsm.Binding(Switch, lifecycle="simple", identity="name")
server = lsm.Binding(Server, lifecycle="simple", identity="name")


class Port(lsm.Resource, type="test::Port", id_attribute="name"):
    name: str


@lsm.implementation(switch)
def switch_port(s: lsm.Service[Switch]) -> Iterator[lsm.Resource]:
    yield Port(agent="switches", name=s.name)


@lsm.implementation(server)
def uplink(s: lsm.Service[Server]) -> Iterator[lsm.Resource]:
    yield Port(agent="servers", name=s.name, requires=[Port.resource_id("switches", s.switch.name)])
"""


def test_a_cross_set_requires_is_refused_by_the_validation_naming_rule_6(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    model = tmp_path / "cabling.py"
    model.write_text(MODEL)
    # the validation compiles the switch's tree too (it follows the server's relation): the
    # requires then points into another set of the same compile, not out of it
    engine = engine_factory(str(model), embedded_worker=True, selector="relation_closure")
    inventory = engine.facades.inventory
    sw = inventory.create_instance(LOCAL, "switch", {"name": "sw1"}).id
    wait_until(lambda: inventory.get_instance(LOCAL, "switch", sw).state == "creating", "the switch exported")

    srv = inventory.create_instance(LOCAL, "server", {"name": "srv1", "switch": sw}).id
    wait_until(
        lambda: inventory.get_instance(LOCAL, "server", srv).state == "rejected", "the server rejected"
    )

    (line,) = [e for e in inventory.instance_log(LOCAL, "server", srv) if e.trigger == "validate"]
    assert (line.source, line.target, line.is_error) == ("start", "rejected", True)
    assert "export rule 6" in line.message
    assert "test::Port[switches,name=sw1]" in line.message
    assert line.compile_id is not None
    report = engine.facades.compiles.get_compile(LOCAL, line.compile_id).report
    error = report["error"]
    assert error["error"] == "model_error" and error["rule"] == 6
    assert error["requires"] == "test::Port[switches,name=sw1]"
    assert sorted(error["sets"]) == sorted([sw, srv])
    cause = inventory.diagnose(LOCAL, "server", srv).cause[0]
    assert cause.kind == "failed_validation" and "export rule 6" in cause.message
