"""AutoEdge and AutoGroup end to end (docs/semantics.md §5): the bundled ``std::Directory`` and
``std::File`` deployed by a real agent into real directories.

* a file in a directory managed by another resource is deployed after it, with no written
  ``requires`` (the edge the store added is marked as automatic);
* files of one directory are one handler call per group, each with its own result, ``noop`` and
  ``retry``; ``autogroup=False`` deploys each alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsm_handlers.files import Directory, File

from lsm.desired_state.records import ResourceRecord
from lsm.model.meta import Meta
from lsm.runtime.wiring import ApiRuntime
from tests.deploy.agents import actions, agent_for, export, run, status


def record(resource: Any) -> ResourceRecord:
    """The record a compile stores for ``resource`` (its automatic-edge candidates included)."""
    data = resource.to_data()
    return ResourceRecord(data.id, data.attributes, data.requires, data.autoedges)


def test_a_file_in_a_directory_managed_by_another_resource_is_deployed_after_it_without_a_written_requires(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    folder = Directory(agent="host", path=str(state_dir / "etc"), mode=0o750)
    motd = File(agent="host", path=str(state_dir / "etc" / "motd"), content="hello\n")
    assert motd.requires == ()
    export(engine, {"site": [record(motd), record(folder)]})
    env_id = engine.context(None).env_id
    stored = {r.id: r for _, r in engine.store.resources(env_id, 1)}
    assert stored[motd.id].requires == (folder.id,)
    assert stored[motd.id].attributes["auto_requires"] == [folder.id]

    run(agent)

    assert (state_dir / "etc" / "motd").read_text() == "hello\n"
    made, written = actions(engine, folder.id), actions(engine, motd.id)
    assert [a["action"] for a in made] == ["create"] and [a["action"] for a in written] == ["create"]
    assert made[0]["id"] < written[0]["id"]  # the directory first, then its file
    assert status(engine, motd.id)["status"] == "deployed"


def files(root: Path, count: int, **meta: Any) -> list[File]:
    return [
        File(agent="host", path=str(root / f"f{n}"), content=f"{n}\n", meta=Meta(**meta) if meta else None)
        for n in range(count)
    ]


def test_100_files_of_one_directory_cost_far_fewer_handler_calls_than_100(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    grouped = files(state_dir, 100)
    export(engine, {"site": [record(f) for f in grouped]})

    run(agent)

    assert agent.runner.handler_calls <= 5
    for f in grouped:  # each member keeps its own result and action
        assert Path(f.path).read_text() == f.content
        assert [a["action"] for a in actions(engine, f.id)] == ["create"]
        assert status(engine, f.id)["status"] == "deployed"


def test_autogroup_false_deploys_each_file_alone(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    alone = files(state_dir, 20, autogroup=False)
    export(engine, {"site": [record(f) for f in alone]})

    run(agent)

    assert agent.runner.handler_calls == 20
    assert all(Path(f.path).read_text() == f.content for f in alone)


def test_a_group_keeps_each_members_noop_and_retry(
    engine_factory: Callable[..., ApiRuntime], state_dir: Path
) -> None:
    engine = engine_factory("tests.deploy.file_model")
    agent = agent_for(engine, state_dir)
    (state_dir / "taken").mkdir(parents=True)  # a directory where a file should go: its write fails
    good = files(state_dir, 5)
    quiet = File(agent="host", path=str(state_dir / "quiet"), content="q", meta=Meta(noop=True))
    broken = File(agent="host", path=str(state_dir / "taken"), content="b", meta=Meta(retry=3, delay=60))
    export(engine, {"site": [record(f) for f in [*good, quiet, broken]]})

    run(agent)

    assert agent.runner.handler_calls < 7
    assert all(status(engine, f.id)["status"] == "deployed" for f in good)
    assert not Path(quiet.path).exists()
    assert [a["action"] for a in actions(engine, quiet.id)] == ["noop"]
    assert status(engine, quiet.id)["status"] == "noop_pending"
    failed = status(engine, broken.id)
    assert (failed["status"], failed["attempts"]) == ("pending", 1)  # tries left: its own retry
    assert "taken" in failed["last_error"]
