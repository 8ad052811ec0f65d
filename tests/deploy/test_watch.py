"""Watch (docs/semantics.md §5, docs/handlers.md §1): drift seen by a handler's watch is checked
and repaired through the normal deploy path, under the metaparameters, with no poll and the
repair run at its default interval (600 s); a failing watch is retried and never stops the agent.

The engines here run their service loop (compiles and an embedded agent), on SQLite and
PostgreSQL; files are real (``std::File`` with inotify), the engine-side rules are also tested
with the in-process target of ``tests.deploy.watch_model``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsm_handlers.linux import Interface, Namespace
from sqlalchemy.exc import NoResultFound

from lsm.deploy.agent import AgentService
from lsm.desired_state.records import ResourceRecord
from lsm.runtime.wiring import ApiRuntime
from tests.deploy import watch_model
from tests.deploy.agents import actions, export, status
from tests.netlab import ip, netns_prefix
from tests.waiting import wait_until

__all__ = ["netns_prefix"]  # the fixture, imported for the tests below


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    watch_model.reset()
    yield
    watch_model.reset()


@pytest.fixture
def running(engine_factory: Callable[..., ApiRuntime], tmp_path: Path) -> Callable[..., ApiRuntime]:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)

    def make(model: str = "tests.deploy.watch_model") -> ApiRuntime:
        return engine_factory(
            model, embedded_worker=True, embedded_agent=True, config={"state_dir": str(state)}
        )

    return make


def agent_of(engine: ApiRuntime) -> AgentService:
    agent = engine.processing.agent
    assert agent is not None
    return agent


def std_file(path: Path, content: str, **meta: Any) -> ResourceRecord:
    attributes: dict[str, Any] = {"agent": "a", "path": str(path), "content": content, "mode": 0o644}
    attributes["purged"] = False
    if meta:
        attributes["meta"] = meta
    return ResourceRecord(f"std::File[a,path={path}]", attributes, ())


def watched(name: str, value: str = "desired", **meta: Any) -> ResourceRecord:
    attributes: dict[str, Any] = {"agent": "a", "name": name, "value": value, "purged": False}
    if meta:
        attributes["meta"] = meta
    return ResourceRecord(f"test::Watched[a,name={name}]", attributes, ())


def edit(path: Path, text: str) -> None:
    """Edit by hand the way editors save: a new file renamed over the old one."""
    temporary = path.with_name(f".{path.name}.swp")
    temporary.write_text(text)
    os.replace(temporary, path)


def deployed(engine: ApiRuntime, resource_id: str) -> bool:
    """Whether the resource's row exists and is ``deployed`` (its plan may not have run yet)."""
    try:
        return bool(status(engine, resource_id)["status"] == "deployed")
    except NoResultFound:
        return False


def kinds(engine: ApiRuntime, resource_id: str) -> list[str]:
    return [a["action"] for a in actions(engine, resource_id)]


def test_a_watched_file_edited_by_hand_is_repaired_with_no_poll_and_no_repair_run(
    running: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = running("tests.deploy.file_model")
    assert engine.context(None).settings.deploy_repair_interval == 600  # the default
    path = tmp_path / "state" / "motd"
    record = std_file(path, "desired")
    export(engine, {"s1": [record]})
    agent = agent_of(engine)
    wait_until(lambda: agent.watches.active() == 1, "the deployed file is watched")
    assert path.read_text() == "desired"

    path.write_text("edited by hand")  # in place
    wait_until(lambda: path.read_text() == "desired", "the edited file is back to its desired content")
    wait_until(lambda: "update" in kinds(engine, record.id), "the repair is in the action log")

    edit(path, "edited again")  # as an editor saves
    wait_until(lambda: path.read_text() == "desired", "the file is back again")
    wait_until(lambda: deployed(engine, record.id), "the check is written")
    repairs = [a for a in actions(engine, record.id) if a["action"] == "update"]
    assert repairs[-1]["changes"]["content"] == {"current": "edited again", "desired": "desired"}
    assert status(engine, record.id)["poll_at"] is None


def test_a_removed_watched_file_is_created_again(running: Callable[..., ApiRuntime], tmp_path: Path) -> None:
    engine = running("tests.deploy.file_model")
    path = tmp_path / "state" / "gone"
    export(engine, {"s1": [std_file(path, "here")]})
    wait_until(lambda: agent_of(engine).watches.active() == 1, "the file is watched")
    path.unlink()
    wait_until(lambda: path.exists() and path.read_text() == "here", "the removed file is back")


def test_with_noop_drift_is_reported_in_the_action_log_not_repaired(
    running: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = running("tests.deploy.file_model")
    path = tmp_path / "state" / "noop.conf"
    path.write_text("desired")
    path.chmod(0o644)
    record = std_file(path, "desired", noop=True)
    export(engine, {"s1": [record]})
    wait_until(lambda: agent_of(engine).watches.active() == 1, "the file in its desired state is watched")
    assert kinds(engine, record.id) == ["read"]

    edit(path, "edited by hand")
    wait_until(lambda: "noop" in kinds(engine, record.id), "the drift is reported")
    wait_until(lambda: status(engine, record.id)["status"] == "noop_pending", "the report is written")
    noop = [a for a in actions(engine, record.id) if a["action"] == "noop"][-1]
    assert noop["changes"]["content"] == {"current": "edited by hand", "desired": "desired"}
    assert path.read_text() == "edited by hand"  # reported, not rewritten


def test_a_storm_of_edits_is_collated_by_limit_and_burst_and_the_last_edit_is_repaired(
    running: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = running("tests.deploy.file_model")
    path = tmp_path / "state" / "storm.conf"
    record = std_file(path, "desired", limit=1.0, burst=1)
    export(engine, {"s1": [record]})
    agent = agent_of(engine)
    wait_until(lambda: agent.watches.active() == 1, "the file is watched")
    before = len(actions(engine, record.id))

    for n in range(100):
        edit(path, f"edit {n}")
    wait_until(lambda: path.read_text() == "desired", "the file is repaired after the storm")
    wait_until(lambda: deployed(engine, record.id), "the last check is written")
    wait_until(lambda: agent.drift.pending() == 0, "no drift mark is left to write")

    checks = actions(engine, record.id)[before:]
    assert 1 <= len(checks) <= 6, [a["action"] for a in checks]  # 100 edits, a handful of checks
    repairs = [a for a in checks if a["action"] == "update"]
    assert repairs[-1]["changes"]["content"]["current"] == "edit 99"  # the last edit, replayed
    assert path.read_text() == "desired"


def test_a_raising_watch_is_retried_under_retry_and_delay_and_the_agent_keeps_deploying(
    running: Callable[..., ApiRuntime],
) -> None:
    engine = running()
    watch_model.WATCH_FAULTS["a"] = 2
    export(engine, {"s1": [watched("a", retry=3, delay=0.05)]})
    wait_until(lambda: "a" in watch_model.WATCHING, "the watch starts on its third try")
    assert watch_model.STARTS["a"] == 3

    other = watched("b")
    export(engine, {"s2": [other]})
    wait_until(lambda: deployed(engine, other.id), "the agent goes on deploying")

    watch_model.TARGET["a"] = "drifted"
    watch_model.WATCHING["a"]()
    wait_until(lambda: watch_model.TARGET["a"] == "desired", "the drift the restarted watch saw is repaired")


def test_a_watch_whose_tries_are_spent_is_given_up_and_the_agent_goes_on(
    running: Callable[..., ApiRuntime],
) -> None:
    engine = running()
    watch_model.WATCH_FAULTS["a"] = 5
    export(engine, {"s1": [watched("a", retry=1, delay=0.01)]})
    wait_until(lambda: watch_model.STARTS["a"] == 2, "the watch is tried twice")
    other = watched("b")
    export(engine, {"s2": [other]})
    wait_until(lambda: "b" in watch_model.WATCHING, "the next resource is deployed and watched")
    assert watch_model.STARTS["a"] == 2  # retry=1: two tries, then given up
    assert "a" not in watch_model.WATCHING
    assert status(engine, watched("a").id)["status"] == "deployed"  # the deploy's own tries are untouched


def test_poll_above_zero_turns_the_watch_off(running: Callable[..., ApiRuntime]) -> None:
    engine = running()
    export(engine, {"s1": [watched("polled", poll=3600), watched("w")]})
    wait_until(lambda: "w" in watch_model.WATCHING, "the resource without poll is watched")
    wait_until(lambda: agent_of(engine).watches._seen is not None, "the watches compared with the rows")
    assert watch_model.STARTS["polled"] == 0


def test_a_watch_stops_when_its_resource_leaves_the_desired_state(running: Callable[..., ApiRuntime]) -> None:
    engine = running()
    export(engine, {"s1": [watched("a")], "s2": [watched("b")]})
    wait_until(lambda: {"a", "b"} <= set(watch_model.WATCHING), "both are watched")
    export(engine, {"s1": []})
    wait_until(lambda: "a" not in watch_model.WATCHING, "the watch of the resource that left stops")
    assert "b" in watch_model.WATCHING


def test_watches_start_again_in_the_agent_that_takes_the_names(
    running: Callable[..., ApiRuntime], engine_factory: Callable[..., ApiRuntime]
) -> None:
    engine = running()
    export(engine, {"s1": [watched("a")]})
    wait_until(lambda: "a" in watch_model.WATCHING, "the first agent watches it")
    engine.stop()
    assert "a" not in watch_model.WATCHING  # stopped with its agent

    successor = running()
    wait_until(lambda: "a" in watch_model.WATCHING, "the next agent watches what is deployed")
    assert watch_model.STARTS["a"] == 2
    watch_model.TARGET["a"] = "drifted"
    watch_model.WATCHING["a"]()
    wait_until(lambda: watch_model.TARGET["a"] == "desired", "the next agent repairs it")
    assert agent_of(successor).watches.active() == 1


def test_a_watched_interface_changed_by_hand_is_repaired_through_netlink(
    running: Callable[..., ApiRuntime], netns_prefix: str
) -> None:
    engine = running("tests.deploy.file_model")
    namespace = Namespace(agent="lab", name=f"{netns_prefix}r1")
    interface = Interface(
        agent="lab",
        namespace=namespace.name,
        name="p0",
        kind="veth",
        peer="p0-peer",
        mtu=1500,
        requires=[namespace],
    )
    records = [ResourceRecord(*r.to_data()) for r in (namespace, interface)]
    export(engine, {"s1": records})
    wait_until(lambda: agent_of(engine).watches.active() == 2, "the namespace and the interface are watched")

    ip("-n", namespace.name, "link", "set", "dev", "p0", "mtu", "1400")
    wait_until(
        lambda: (
            '"mtu":1500'
            in ip("-n", namespace.name, "-j", "link", "show", "dev", "p0").stdout.replace(" ", "")
        ),
        "the MTU changed by hand is set back",
    )
    wait_until(lambda: "update" in kinds(engine, records[1].id), "the repair is in the action log")
    repairs = [a for a in actions(engine, records[1].id) if a["action"] == "update"]
    assert repairs[-1]["changes"]["mtu"] == {"current": 1400, "desired": 1500}
