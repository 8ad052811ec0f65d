"""The seed scenario of issue 26 on examples/networks: network 0 shrunk from 5 hosts to 1.

A real engine (embedded compile worker and deploy agent, the example's config-file handler
writing one JSON file per resource under the state directory), on SQLite and PostgreSQL. The
four hosts that left network 0's resource set are removed from the target by their handler;
with the ``orphan`` deletion policy (here the type's default) they stay, and the action log
says so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsm_handlers.config import config_path

from lsm.facade import RequestContext
from lsm.runtime.wiring import ApiRuntime
from tests.waiting import wait_until

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "networks"
LOCAL = RequestContext.local()
NETWORKS = 3


def host_file(state_dir: Path, network: str, i: int) -> Path:
    return config_path(state_dir, host_id(network, i), network)


def host_id(network: str, i: int) -> str:
    return f"net::Host[{network},name=h{i}]"


def deployed(engine: ApiRuntime, state_dir: Path) -> str:
    """Order the networks, wait for them all ``up`` with their host files; network 0's id."""
    inventory = engine.facades.inventory
    ids = [inventory.create_instance(LOCAL, "network", {"name": f"net-{n}"}).id for n in range(NETWORKS)]

    def up() -> bool:
        return {inventory.get_instance(LOCAL, "network", i).state for i in ids} == {"up"}

    wait_until(up, "the networks are up")
    assert all(host_file(state_dir, f"net-{n}", i).is_file() for n in range(NETWORKS) for i in range(5))
    return ids[0]


def shrink(engine: ApiRuntime, network_id: str) -> None:
    """Network 0 from 5 hosts to 1, through the inventory as an operator does; back ``up``."""
    inventory = engine.facades.inventory
    before = inventory.get_instance(LOCAL, "network", network_id)
    inventory.update_instance(
        LOCAL, "network", network_id, current_version=before.version, attributes={"hosts": 1}
    )

    def up_again() -> bool:
        now = inventory.get_instance(LOCAL, "network", network_id)
        return now.state == "up" and now.version > before.version

    wait_until(up_again, "network 0 is up with one host")


def test_the_four_hosts_that_left_network_0_are_removed_from_the_target(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    engine = engine_factory(
        str(EXAMPLE), embedded_worker=True, embedded_agent=True, config={"state_dir": str(state_dir)}
    )
    network_id = deployed(engine, state_dir)

    shrink(engine, network_id)

    deploy = engine.facades.deploy

    def removed() -> bool:  # the action log, newest first: written once the handler returned
        return all(
            deploy.resource_actions(LOCAL, host_id("net-0", i))[0].action == "delete" for i in range(1, 5)
        )

    wait_until(removed, "the four hosts are removed, as their action logs say")
    assert not any(host_file(state_dir, "net-0", i).exists() for i in range(1, 5))
    assert host_file(state_dir, "net-0", 0).is_file()
    assert all(host_file(state_dir, f"net-{n}", i).is_file() for n in range(1, NETWORKS) for i in range(5))
    for i in range(1, 5):
        line = deploy.resource_actions(LOCAL, host_id("net-0", i))[0]
        assert "removed from its target" in line.messages[0].message
    listed = {r.id for r in deploy.list_resources(LOCAL, limit=1000)}
    assert {host_id("net-0", i) for i in range(1, 5)}.isdisjoint(listed)


def test_with_the_orphan_policy_the_hosts_stay_and_the_action_log_says_so(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    model = tmp_path / "networks_orphan"
    model.mkdir()
    source = (EXAMPLE / "__init__.py").read_text()
    declaration = 'class Host(lsm.Resource, type="net::Host", id_attribute="name"):'
    assert declaration in source
    (model / "__init__.py").write_text(
        source.replace(declaration, declaration.replace('"name"):', '"name", deletion="orphan"):'))
    )
    state_dir = tmp_path / "state"
    engine = engine_factory(
        str(model), embedded_worker=True, embedded_agent=True, config={"state_dir": str(state_dir)}
    )
    network_id = deployed(engine, state_dir)

    shrink(engine, network_id)

    deploy = engine.facades.deploy

    def orphaned() -> bool:
        return all(
            deploy.resource_actions(LOCAL, host_id("net-0", i))[0].action == "orphan" for i in range(1, 5)
        )

    wait_until(orphaned, "the four hosts are orphaned in the action log")
    assert all(host_file(state_dir, "net-0", i).is_file() for i in range(5))
    line = deploy.resource_actions(LOCAL, host_id("net-0", 1))[0]
    assert "deletion policy is 'orphan'" in line.messages[0].message
    assert "left on its target" in line.messages[0].message
