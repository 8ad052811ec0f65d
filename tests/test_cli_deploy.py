"""``lsm resources`` and ``lsm deploy`` (typer's CliRunner) against a served engine on both backends.

No agent runs here: a test that needs resources to move plays the agent in a thread, writing
the state rows as the engine would (``FakeAgent``), and the CLI must follow it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from typer.testing import CliRunner, Result

from lsm.cli import app
from lsm.desired_state import ExportRequest, ResourceRecord
from lsm.runtime.wiring import ApiRuntime
from lsm.store.deploy.tables import lsm_resource_state
from lsm.testing import served_url
from tests.deploy import filemodel
from tests.deploy.seed import rid, seed_actions, seed_desired, seed_instance, seed_states, state

ODD = "std::File[h1:x,path=/etc/lsm,a=b:c/motd]"
H1, H2 = rid("net::Host", "a1", "h1"), rid("net::Host", "a1", "h2")
P1 = rid("net::Port", "a2", "p1")


@pytest.fixture
def engine(engine_factory: Callable[..., ApiRuntime]) -> ApiRuntime:
    engine = engine_factory("tests.deploy.filemodel")
    env_id = engine.context(None).env_id
    seed_states(
        engine.db,
        env_id,
        [
            state(ODD),
            state(H1),
            state(H2, status="failed", last_error="unreachable"),
            state(P1, status="skipped", requires=[H2]),
        ],
    )
    with engine.db.write() as session:
        seed_desired(
            session, env_id, ODD, {"agent": "h1:x", "path": "/etc/lsm,a=b:c/motd", "content": "motd"}
        )
    seed_actions(engine.db, env_id, ODD, ["create", "update"])
    return engine


@pytest.fixture
def lsm(engine: ApiRuntime) -> Iterator[Callable[..., Result]]:
    runner = CliRunner()
    with served_url(engine) as url:

        def run(*args: str) -> Result:
            return runner.invoke(app, [*args, "--url", url], env={"COLUMNS": "250"})

        yield run


def test_resources_table_filters_and_json(lsm: Callable[..., Result]) -> None:
    table = lsm("resources")
    failed = lsm("resources", "--status", "failed", "--json")
    hosts = lsm("resources", "--type", "net::Host", "--agent", "a1", "--json")

    assert table.exit_code == 0, table.output
    assert all(i in table.stdout for i in (ODD, H1, H2, P1, "unreachable", "skipped"))
    assert [r["id"] for r in json.loads(failed.stdout)] == [H2]
    assert [r["id"] for r in json.loads(hosts.stdout)] == [H1, H2]


def test_resources_show_prints_attributes_and_actions_and_an_unknown_id_is_an_error(
    lsm: Callable[..., Result],
) -> None:
    shown = lsm("resources", "show", ODD)
    as_json = lsm("resources", "show", ODD, "--json", "--actions", "1")
    missing = lsm("resources", "show", "net::Host[a1,name=ghost]")
    bad = lsm("resources", "--status", "nonsense")

    assert shown.exit_code == 0, shown.output
    assert "desired attributes" in shown.stdout and "/etc/lsm,a=b:c/motd" in shown.stdout
    assert "update" in shown.stdout and "create" in shown.stdout
    data = json.loads(as_json.stdout)
    assert data["resource"]["id"] == ODD and [a["action"] for a in data["actions"]] == ["update"]
    assert missing.exit_code == 1 and "net::Host[a1,name=ghost]" in missing.output
    assert bad.exit_code == 1 and "status" in bad.output


def test_deploy_dry_run_prints_the_changes_and_exits_1_on_item_errors(
    engine: ApiRuntime, lsm: Callable[..., Result], tmp_path: Path
) -> None:
    target, theirs = tmp_path / "motd", tmp_path / "theirs"
    resources = [
        filemodel.TFile(agent="local", path=str(target), content="hello"),
        filemodel.TFile(agent="remote", path=str(theirs), content="x"),
        filemodel.Orphan(agent="local", name="o"),
    ]
    records = [ResourceRecord(*r.to_data()) for r in resources]
    engine.store.export(engine.context(None).env_id, ExportRequest(kind="full", shared=records))

    local = lsm("deploy", "--dry-run", "--agent", "local")
    remote = lsm("deploy", "--dry-run", "--agent", "remote", "--json")

    assert local.exit_code == 1, local.output
    assert "create" in local.stdout and "hello" in local.stdout and "test::Orphan" in local.stdout
    assert remote.exit_code == 0, remote.output
    assert [i["action"] for i in json.loads(remote.stdout)["resources"]] == ["create"]
    assert not target.exists() and not theirs.exists()


def test_deploy_schedules_and_refuses_contradictory_options(lsm: Callable[..., Result]) -> None:
    scheduled = lsm("deploy", "--json")
    contradictory = lsm("deploy", "--dry-run", "--wait")

    assert scheduled.exit_code == 0, scheduled.output
    assert json.loads(scheduled.stdout)["scheduled"] == 2
    assert contradictory.exit_code == 2


class FakeAgent:
    """Plays the deploy agent: once resources are pending, sets them to ``outcome``."""

    def __init__(self, engine: ApiRuntime, outcome: str) -> None:
        self.engine = engine
        self.outcome = outcome
        self.stop = threading.Event()
        self.acted = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        t = lsm_resource_state
        while not self.stop.wait(0.05):
            with self.engine.db.write() as session:
                result = session.connection().execute(
                    update(t).where(t.c.status == "pending").values(status=self.outcome)
                )
                self.acted += result.rowcount or 0

    def __enter__(self) -> FakeAgent:
        self.thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self.stop.set()
        self.thread.join(10)


def test_deploy_wait_follows_until_nothing_is_pending(engine: ApiRuntime, lsm: Callable[..., Result]) -> None:
    with FakeAgent(engine, "deployed") as agent:
        result = lsm("deploy", "--wait", "--timeout", "30")
    assert result.exit_code == 0, result.output
    assert agent.acted == 2
    assert "2 resource(s) scheduled" in result.stdout and "deployed 4" in result.stdout


def test_deploy_wait_exits_1_when_resources_fail_or_time_runs_out(
    engine: ApiRuntime, lsm: Callable[..., Result]
) -> None:
    with FakeAgent(engine, "failed"):
        failed = lsm("deploy", "--wait", "--timeout", "30", "--json")
    stuck = lsm("deploy", "--wait", "--timeout", "0.5")  # no agent: the two stay pending

    assert failed.exit_code == 1, failed.output
    assert json.loads(failed.stdout)["status"]["counts"] == {"deployed": 2, "failed": 2}
    assert stuck.exit_code == 1
    assert "did not finish within 0.5 s" in stuck.output and "pending 2" in stuck.output


def test_instance_show_and_diagnose_print_the_deploy(engine: ApiRuntime, lsm: Callable[..., Result]) -> None:
    created = lsm("instance", "create", "box", "--attr", "name=b1", "--json")
    box = json.loads(created.stdout)
    seed_instance(engine.db, engine.context(None).env_id, box["id"], [H1, H2, P1])

    shown = lsm("instance", "show", "box", box["id"])
    diagnosis = lsm("instance", "diagnose", "box", box["id"])

    assert "1/3 deployed, 1 failed, 1 skipped" in shown.stdout, shown.output
    assert f"{H2} (failed): unreachable" in diagnosis.stdout, diagnosis.output
    assert f"{P1} (skipped): requires {H2}" in diagnosis.stdout
