"""examples/resource_sets: the seeds' partial-compile example through ``lsm export``, on both backends.

The seed (Inmanta's "partial compiles" page): 1,000 networks of 5 hosts, each network a resource
set, one shared agent config; then a partial model with network 0 and one host. The result must
equal the seed's "comparable complete model" (``full_result.py``). Everything goes through the
command and the served app, as a user would run it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from lsm.cli import app
from lsm.model import declared_model
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "resource_sets"
#: a resource as compared: (id, attributes as sorted JSON, requires)
Item = tuple[str, str, tuple[str, ...]]
#: set name -> its resources
Sets = dict[str, list[Item]]


def export(base: str, model: Path | str, *flags: str) -> Any:
    """``lsm export MODEL FLAGS --json`` against ``base``: the result (exit code, output)."""
    return CliRunner().invoke(app, ["export", str(model), *flags, "--url", base, "--json"])


def stored(engine: ApiRuntime, version: int) -> tuple[Sets, list[Item]]:
    """Version ``version``'s sets and shared resources, as (id, attributes JSON, requires)."""
    env_id = engine.context(None).env_id
    sets: Sets = {}
    shared: list[Item] = []
    for name, record in engine.store.resources(env_id, version):
        item = (record.id, json.dumps(record.attributes, sort_keys=True), record.requires)
        (shared if name is None else sets.setdefault(name, [])).append(item)
    return {k: sorted(v) for k, v in sets.items()}, sorted(shared)


def declared(model: Path) -> tuple[Sets, list[Item]]:
    """What a full export of ``model`` stores: the same shape as ``stored``."""
    found = declared_model(str(model))
    sets = {
        name: sorted((r.id, json.dumps(r.attributes, sort_keys=True), r.requires) for r in resources)
        for name, resources in found.sets.items()
    }
    shared = sorted((r.id, json.dumps(r.attributes, sort_keys=True), r.requires) for r in found.shared)
    return sets, shared


def complete_without(tmp_path: Path, network: int) -> Path:
    """``full_result.py`` with one network left out: the complete model after its deletion."""
    text = (EXAMPLE / "full_result.py").read_text()
    assert "for i in range(1, 1000):\n    network(i, range(5))" in text
    text = text.replace(
        "for i in range(1, 1000):\n    network(i, range(5))",
        f"for i in range(1, 1000):\n    if i != {network}:\n        network(i, range(5))",
    )
    path = tmp_path / f"complete_without_{network}.py"
    path.write_text(text)
    return path


def test_full_then_partial_then_a_deleted_set_equals_the_complete_model(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    engine = engine_factory()
    with served_url(engine) as base:
        full = export(base, EXAMPLE / "full.py")
        partial = export(base, EXAMPLE / "partial.py", "--partial")
        deleted = export(base, EXAMPLE / "partial.py", "--partial", "--delete-resource-set", "network-7")
    assert full.exit_code == 0, full.output
    assert json.loads(full.stdout)["resource_count"] == 5001
    assert partial.exit_code == 0, partial.output
    info = json.loads(partial.stdout)
    assert (info["version"], info["kind"], info["sets_replaced"]) == (2, "partial", ["network-0"])
    assert info["resource_count"] == 5001 - 4
    # the seed: network 0 has one host, the other networks stay as they were
    assert stored(engine, 2) == declared(EXAMPLE / "full_result.py")
    assert deleted.exit_code == 0, deleted.output
    info = json.loads(deleted.stdout)
    assert (info["version"], info["sets_deleted"]) == (3, ["network-7"])
    # network-0's content did not change: the same revision, nothing rewritten
    assert info["sets_replaced"] == []
    assert stored(engine, 3) == declared(complete_without(tmp_path, 7))
    env_id = engine.context(None).env_id
    revisions = engine.store.set_revisions(env_id, 3)
    assert revisions["network-0"] == 2 and revisions["network-1"] == 1 and "network-7" not in revisions


def test_the_complete_model_exported_whole_gives_the_same_state(
    engine_factory: Callable[..., ApiRuntime],
) -> None:
    engine = engine_factory()
    with served_url(engine) as base:
        result = export(base, EXAMPLE / "full_result.py")
    assert result.exit_code == 0, result.output
    assert stored(engine, 1) == declared(EXAMPLE / "full_result.py")
    sets, shared = stored(engine, 1)
    assert len(sets) == 1000 and [len(sets["network-0"]), len(sets["network-1"])] == [1, 5]
    assert [s[0] for s in shared] == ["std::AgentConfig[internal,agentname=host_agent]"]


def test_a_partial_that_moves_a_host_to_another_set_is_refused_naming_the_rule(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    """Host 0-0 of network-0 exported in network-1, network-0 not in the export: it would be in
    two sets (rule 1, the lowest broken rule: rule 5 forbids the move as well). Exported as
    shared while network-0 is deleted: rule 5. Either way nothing is written."""
    to_other_set = tmp_path / "move.py"
    to_other_set.write_text(
        (EXAMPLE / "partial.py")
        .read_text()
        .replace(
            "network(0, range(1))", "lsm.ResourceSet(name='network-1', resources=[host(0, 0), host(1, 0)])"
        )
    )
    to_shared = tmp_path / "to_shared.py"
    to_shared.write_text(
        (EXAMPLE / "partial.py").read_text().replace("network(0, range(1))", "lsm.shared(host(0, 0))")
    )
    engine = engine_factory()
    with served_url(engine) as base:
        assert export(base, EXAMPLE / "full.py").exit_code == 0
        moved = CliRunner().invoke(app, ["export", str(to_other_set), "--partial", "--url", base])
        shared = CliRunner().invoke(
            app, ["export", str(to_shared), "--partial", "--delete-resource-set", "network-0", "--url", base]
        )
        raw = export(base, to_shared, "--partial", "--delete-resource-set", "network-0")
    said = " ".join(moved.output.split())  # the console wraps long lines
    assert moved.exit_code == 1
    assert (
        "resource example::Host[host_agent,name=0-0] can not be part of multiple resource sets: "
        "network-0 and network-1" in said
    )
    assert (
        'rule: 1 resources: ["example::Host[host_agent,name=0-0]"] sets: ["network-0", "network-1"]' in said
    )
    said = " ".join(shared.output.split())
    assert shared.exit_code == 1
    assert 'rule: 5 resources: ["example::Host[host_agent,name=0-0]"] sets: ["network-0", "shared"]' in said
    assert raw.exit_code == 1
    env_id = engine.context(None).env_id
    assert engine.store.latest_version(env_id) == 1  # nothing written


def test_usage_errors_and_a_model_that_declares_nothing(
    engine_factory: Callable[..., ApiRuntime], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("import lsm\n")
    broken = tmp_path / "broken.py"
    broken.write_text("import lsm\nraise RuntimeError('boom')\n")
    runner = CliRunner()
    no_partial = runner.invoke(app, ["export", str(EXAMPLE / "partial.py"), "--delete-resource-set", "x"])
    soft = runner.invoke(app, ["export", str(EXAMPLE / "partial.py"), "--soft-delete"])
    engine = engine_factory()
    with served_url(engine) as base:
        nothing = runner.invoke(app, ["export", str(empty), "--url", base])
        failing = runner.invoke(app, ["export", str(broken), "--url", base])
        first_partial = runner.invoke(
            app, ["export", str(EXAMPLE / "partial.py"), "--partial", "--url", base]
        )
    assert no_partial.exit_code == 2 and "--partial" in no_partial.output
    assert soft.exit_code == 2
    assert nothing.exit_code == 1 and "declares no lsm.ResourceSet" in nothing.output
    assert failing.exit_code == 1 and "boom" in failing.output
    # rule 7: the first version of an environment must come from a full export
    assert first_partial.exit_code == 1 and "rule: 7" in first_partial.output
    assert engine.store.latest_version(engine.context(None).env_id) is None
