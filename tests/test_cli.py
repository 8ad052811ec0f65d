"""The ``lsm`` command: typer's CliRunner driving the real commands against a real server
(uvicorn on 127.0.0.1 in a thread, see ``lsm.testing``), plus ``lsm server`` and
``lsm quickstart`` as subprocesses."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner, Result

from lsm.cli import app
from lsm.facade import RequestContext
from lsm.testing import running_engine, served_url
from tests.api.fixtures import LIFECYCLES, MODEL, engine, url

__all__ = ["engine", "url"]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def lsm(url: str) -> Iterator[Any]:
    """``lsm(*args)``: run a command against the served engine; ``--url`` is added for you."""
    runner = CliRunner()

    def run(*args: str, server: bool = True) -> Result:
        extra = ["--url", url] if server else []
        return runner.invoke(app, [*args, *extra], env={"COLUMNS": "200"})

    yield run


def as_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_catalog_list_and_show(lsm: Any) -> None:
    listed = lsm("catalog", "list")
    shown = lsm("catalog", "show", "router")
    schema = as_json(lsm("catalog", "show", "router", "--schema", "--json"))

    assert listed.exit_code == 0, listed.output
    assert all(name in listed.stdout for name in ("router", "port", "note", "simple_with_delete_validate"))
    assert shown.exit_code == 0 and "mgmt_ip" in shown.stdout and "rw+" in shown.stdout
    assert schema["x-lsm-entity"] == "router"


def test_an_instance_through_its_whole_life(lsm: Any) -> None:
    created = as_json(
        lsm("instance", "create", "note", "--attr", "title=cli", "--attr", "priority=2", "--json")
    )
    assert (created["version"], created["candidate_attributes"]["priority"]) == (1, 2)

    updated = as_json(
        lsm(
            "instance",
            "update",
            "note",
            "title=cli",
            "--current-version",
            "1",
            "--attributes",
            '{"text": "hi"}',
            "--json",
        )
    )
    published = lsm(
        "instance", "set-state", "note", "title=cli", "published", "--current-version", "2", "-m", "go"
    )
    shown = as_json(lsm("instance", "show", "note", created["id"], "--json"))
    deleted = as_json(lsm("instance", "delete", "note", "title=cli", "--current-version", "3", "--json"))
    log = as_json(lsm("instance", "log", "note", created["id"], "--json"))

    assert updated["candidate_attributes"]["text"] == "hi"
    assert published.exit_code == 0 and "published" in published.stdout
    assert shown["state"] == "published"
    assert deleted["deleted"] is True
    assert [(e["target"], e["message"]) for e in log][2] == ("published", "go")
    assert as_json(lsm("instance", "list", "note", "--json")) == []
    assert len(as_json(lsm("instance", "list", "note", "--include-deleted", "--json"))) == 1


def test_instance_tables_are_printed(lsm: Any) -> None:
    lsm("instance", "create", "note", "--attr", "title=tab")

    listed = lsm("instance", "list", "note", "--state", "draft")
    shown = lsm("instance", "show", "note", "title=tab")
    log = lsm("instance", "log", "note", "title=tab")

    assert listed.exit_code == 0 and "draft" in listed.stdout and '"title": "tab"' in listed.stdout
    assert shown.exit_code == 0 and "candidate" in shown.stdout and "tab" in shown.stdout
    assert log.exit_code == 0 and "draft" in log.stdout


def test_diagnose_says_what_the_instance_may_do(lsm: Any) -> None:
    lsm("instance", "create", "note", "--attr", "title=diag")

    result = lsm("instance", "diagnose", "note", "title=diag")

    assert result.exit_code == 0, result.output
    assert "on_update -> draft" in result.stdout and "api_set_state -> published" in result.stdout


def test_an_engine_error_is_printed_in_red_with_details_and_exit_1(lsm: Any) -> None:
    lsm("instance", "create", "note", "--attr", "title=e1")

    stale = lsm("instance", "update", "note", "title=e1", "--current-version", "7", "--attr", "text=x")
    rw = lsm("instance", "update", "note", "title=e1", "--current-version", "1", "--attr", "title=e2")
    missing = lsm("instance", "show", "note", "title=nothing")

    for result in (stale, rw, missing):
        assert result.exit_code == 1
        assert result.stderr.startswith("error: ")
        assert "Traceback" not in result.output
    assert "version" in stale.stderr
    assert "  - title: " in rw.stderr


def test_bad_command_line_input_is_a_usage_error(lsm: Any) -> None:
    bad_json = lsm("instance", "create", "note", "--attributes", "{not json")
    bad_attr = lsm("instance", "create", "note", "--attr", "no-equals-sign")
    no_version = lsm("instance", "delete", "note", "title=x")
    full_and_ids = lsm("compile", "--full", "--id", "x")
    complete_partial = lsm("compile", "--complete", "--id", "x")

    for result in (bad_json, bad_attr, no_version, full_and_ids, complete_partial):
        assert result.exit_code == 2, result.output


def test_instance_bulk_reads_json_or_yaml_and_lists_every_refused_item(lsm: Any, tmp_path: Path) -> None:
    good = tmp_path / "notes.yaml"
    good.write_text("entity: note\ncreate:\n  - attributes: {title: y1}\n  - attributes: {title: y2}\n")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"create": [{"attributes": {}}, {"attributes": {"title": 1}}]}))

    created = lsm("instance", "bulk", str(good))
    refused = lsm("instance", "bulk", str(bad), "--entity", "note")

    assert created.exit_code == 0, created.output
    assert "2 created, 0 updated" in created.stdout
    assert refused.exit_code == 1
    assert "create[0]" in refused.stderr and "create[1]" in refused.stderr
    assert len(as_json(lsm("instance", "list", "note", "--json"))) == 2


def test_compile_requests(lsm: Any) -> None:
    full = as_json(lsm("compile", "--json"))
    partial = as_json(lsm("compile", "--entity", "note", "--exclude", "x", "--json"))
    table = lsm("compile", "--full")
    complete = as_json(lsm("compile", "--complete", "--json"))

    assert (full["kind"], full["status"]) == ("full", "queued")
    assert (complete["kind"], complete["status"]) == ("full", "queued")
    assert (partial["kind"], partial["service_entities"], partial["exclude"]) == ("partial", ["note"], ["x"])
    assert table.exit_code == 0 and "queued" in table.stdout


def test_compile_explain_and_selector_list(lsm: Any) -> None:
    router = as_json(
        lsm("instance", "create", "router", "--attr", "mgmt_ip=10.9.0.1", "--attr", "name=r", "--json")
    )
    explained = lsm("compile", "--id", router["id"], "--explain", "--selector", '["owner_tree"]')
    data = as_json(lsm("compile", "--id", router["id"], "--explain", "--json"))
    listed = lsm("selector", "list")
    queued = as_json(lsm("compile", "--id", router["id"], "--selector", "relation_closure", "--json"))

    assert explained.exit_code == 0, explained.output
    assert "dry run" in explained.stdout and router["id"] in explained.stdout
    assert data["requested"] == [router["id"]] and data["selector"] == "owner_tree"
    assert listed.exit_code == 0 and "relation_closure" in listed.stdout and "states" in listed.stdout
    assert queued["kind"] == "partial" and queued["status"] == "queued"


def test_environments_and_settings(lsm: Any) -> None:
    created = as_json(lsm("environment", "create", "lab", "--model", str(MODEL), "--json"))
    changed = as_json(lsm("environment", "set", "recompile_backoff", "1.5", "-e", "lab", "--json"))
    listed = lsm("environment", "list")
    settings = lsm("environment", "settings", "-e", "lab")
    refused = lsm("environment", "set", "colour", "red")

    assert created["name"] == "lab"
    assert changed["recompile_backoff"]["value"] == 1.5
    assert listed.exit_code == 0 and "lab" in listed.stdout and "default" in listed.stdout
    assert settings.exit_code == 0 and "1.5" in settings.stdout
    assert refused.exit_code == 1 and "colour" in refused.stderr


def test_lifecycle_show_works_offline() -> None:
    runner = CliRunner()

    dot = runner.invoke(app, ["lifecycle", "show", "simple", "--dot"])
    table = runner.invoke(
        app, ["lifecycle", "show", "notebook", "--lifecycle-dir", str(LIFECYCLES)], env={"COLUMNS": "200"}
    )
    unknown = runner.invoke(app, ["lifecycle", "show", "nope"])

    assert dot.exit_code == 0 and dot.stdout.startswith('digraph "simple" {')
    assert '"up" -> "deleting"' in dot.stdout
    assert table.exit_code == 0 and "published" in table.stdout
    assert unknown.exit_code == 1 and "unknown lifecycle 'nope'" in unknown.stderr


def test_agent_command_takes_the_agent_options() -> None:
    result = CliRunner().invoke(app, ["agent", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--database", "--agent", "--noop", "--sema", "--threads"):
        assert option in result.stdout


def test_lsm_worker_process_runs_the_queued_compiles(tmp_path: Path) -> None:
    from lsm.runtime.config import ServerConfig
    from lsm.runtime.wiring import build_api

    database = f"sqlite:///{tmp_path / 'lsm.db'}"
    model = str(REPO / "examples" / "networks")
    engine = build_api(ServerConfig(database_url=database, model=model, embedded_worker=False))
    engine.start()
    created = engine.facades.inventory.create_instance(
        RequestContext.local(), "network", {"name": "n1", "hosts": 2}
    )
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsm.cli",
            "worker",
            "--database",
            database,
            "--model",
            model,
            "--poll",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ctx = RequestContext.local()

        def exported() -> bool:
            # the validation moves it to creating, and the export that follows runs after that
            state = engine.facades.inventory.get_instance(ctx, "network", created.id).state
            return state == "creating" and bool(engine.facades.desired_state.list_desired_states(ctx))

        deadline = time.monotonic() + 60
        while not exported() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert engine.facades.inventory.get_instance(ctx, "network", created.id).state == "creating"
        assert engine.facades.desired_state.list_desired_states(ctx)[0].resource_count == 3
    finally:
        worker.send_signal(signal.SIGINT)
        worker.wait(timeout=30)
        engine.stop()


def test_an_unreachable_server_is_an_error_not_a_traceback() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound but not listening: connections are refused

        result = CliRunner().invoke(app, ["catalog", "list", "--url", f"http://127.0.0.1:{port}"])

    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot reach the lsm server at http://127.0.0.1:")


def test_compile_wait_and_desired_state_with_the_worker(tmp_path: Path) -> None:
    example = REPO / "examples" / "router_port"
    runner = CliRunner()
    with running_engine(example, f"sqlite:///{tmp_path / 'lsm.db'}") as engine, served_url(engine) as base:

        def run(*args: str) -> Result:
            return runner.invoke(app, [*args, "--url", base], env={"COLUMNS": "200"})

        run("instance", "create", "router", "--attr", "mgmt_ip=10.0.0.1", "--attr", "name=edge")
        deadline = time.monotonic() + 30
        while as_json(run("instance", "show", "router", "mgmt_ip=10.0.0.1", "--json"))["state"] != "creating":
            assert time.monotonic() < deadline, "the router did not reach creating"
            time.sleep(0.05)
        report = as_json(run("compile", "--full", "--wait", "--json"))
        version = str(report["desired_state_version"])
        listed = run("desired-state")
        shown = run("desired-state", version)
        resources = as_json(run("desired-state", version, "--resources", "--json"))

    assert report["status"] == "success"
    assert listed.exit_code == 0 and "full" in listed.stdout
    assert shown.exit_code == 0 and "sets" in shown.stdout
    assert any(r["id"].startswith("net::AgentConfig[") for r in resources)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LSM_")}
    env["PYTHONPATH"] = str(REPO)
    return env


@pytest.mark.parametrize("access_log", [True, False], ids=["access-log", "no-access-log"])
def test_lsm_server_serves_until_interrupted(tmp_path: Path, access_log: bool) -> None:
    port = _free_port()
    # the test lifecycle comes from ./lsm.toml, the rest from the command line
    (tmp_path / "lsm.toml").write_text(f"lifecycle_dirs = [{json.dumps(str(LIFECYCLES))}]\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lsm.cli",
            "server",
            "--model",
            str(MODEL),
            "--port",
            str(port),
            "--database",
            f"sqlite:///{tmp_path / 'server.db'}",
            *([] if access_log else ["--no-access-log"]),
        ],
        cwd=tmp_path,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[0]
                assert time.monotonic() < deadline, "the server did not answer within 30 s"
                time.sleep(0.1)
        catalog = httpx.get(f"http://127.0.0.1:{port}/lsm/v1/service_catalog").json()
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=30)[0]

    assert health.json() == {"status": "ok"}
    assert {e["name"] for e in catalog} == {"router", "port", "note"}
    assert process.returncode == 0, output
    assert (tmp_path / "server.db").exists()
    # uvicorn's line per request: on by default, gone with --no-access-log
    assert ('"GET /lsm/v1/service_catalog HTTP/1.1" 200' in output) is access_log, output


def test_lsm_server_with_a_bad_model_says_so(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lsm.cli", "server", "--model", str(tmp_path / "missing.py"), "--port", "1"],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr


def test_quickstart_runs_end_to_end(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lsm.cli", "quickstart"],
        cwd=tmp_path,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "router 10.0.0.1" in result.stdout
    assert "port eth0" in result.stdout and "port eth1" in result.stdout
    assert "start → acknowledged" in result.stdout  # the validation compile ran
    assert "creating → up" in result.stdout  # the agent deployed the resources
    assert "desired state: version" in result.stdout
    assert "net/Interface/eth1.json" in result.stdout  # the files the example's handlers wrote
    assert "deleting → terminated" in result.stdout  # the deleted port's resources were purged
    assert "removed: " in result.stdout and "eth1.json" in result.stdout.split("removed: ", 1)[1]
    assert "quickstart finished" in result.stdout


def test_compile_wait_follows_the_stream_and_a_failed_compile_exits_1(tmp_path: Path) -> None:
    runner = CliRunner()
    database = f"sqlite:///{tmp_path / 'lsm.db'}"
    with running_engine("tests.models.fragile", database) as engine, served_url(engine) as base:
        ctx = RequestContext.local()
        engine.facades.inventory.import_instances(ctx, "widget", "up", [{"name": "w1", "explode": True}])

        result = runner.invoke(app, ["compile", "--full", "--wait", "--url", base], env={"COLUMNS": "200"})

    assert result.exit_code == 1, result.output
    assert "failed" in result.stdout


def test_compile_retry_queues_a_failed_export_again_and_refuses_a_bad_id(tmp_path: Path) -> None:
    runner = CliRunner()
    database = f"sqlite:///{tmp_path / 'lsm.db'}"
    with running_engine("tests.models.fragile", database) as engine, served_url(engine) as base:
        ctx = RequestContext.local()
        (widget,) = engine.facades.inventory.import_instances(
            ctx, "widget", "creating", [{"name": "w1", "explode": True}]
        )
        first = runner.invoke(app, ["compile", "--full", "--wait", "--json", "--url", base])
        failed = json.loads(first.stdout)
        again = runner.invoke(app, ["compile", "--retry", failed["id"], "--wait", "--json", "--url", base])
        unknown = runner.invoke(
            app, ["compile", "--retry", "00000000-0000-0000-0000-000000000000", "--url", base]
        )
        mixed = runner.invoke(app, ["compile", "--retry", failed["id"], "--full", "--url", base])
        state = engine.facades.inventory.get_instance(ctx, "widget", widget).state

    assert first.exit_code == 1 and failed["status"] == "failed"
    assert again.exit_code == 1, again.output  # still exploding: failed again
    retried = json.loads(again.stdout)
    assert (
        retried["id"] != failed["id"] and retried["reason"] == f"retry of the failed compile {failed['id']}"
    )
    assert unknown.exit_code == 1 and "unknown compile" in unknown.output
    assert mixed.exit_code == 2 and "--retry" in mixed.output
    assert state == "failed"


def test_expert_commands_are_refused_while_off_then_force_state_attributes_and_destroy(lsm: Any) -> None:
    note = as_json(lsm("instance", "create", "note", "--attr", "title=/srv/expert", "--json"))
    ref = "title=/srv/expert"
    off = lsm("expert", "state", "note", ref, "published", "-v", "1", "--reason", "stuck")
    assert off.exit_code != 0 and "expert_mode" in off.output
    assert lsm("environment", "set", "expert_mode", "true").exit_code == 0
    no_reason = lsm("expert", "state", "note", ref, "published", "-v", "1")
    assert no_reason.exit_code != 0 and "--reason" in no_reason.output
    forced = as_json(lsm("expert", "state", "note", ref, "published", "-v", "1", "-r", "stuck", "--json"))
    assert (forced["state"], forced["version"]) == ("published", 2)
    sets = as_json(
        lsm(
            "expert", "attributes", "note", note["id"], "-v", "2", "-r", "fix", "--rollback", "null", "--json"
        )
    )
    assert sets["version"] == 3 and sets["rollback_attributes"] is None
    bad = lsm("expert", "attributes", "note", note["id"], "-v", "3", "-r", "fix", "--active", "[1]")
    assert bad.exit_code != 0 and "--active" in bad.output
    gone = as_json(
        lsm(
            "expert",
            "destroy",
            "note",
            note["id"],
            "-v",
            "3",
            "-r",
            "scrapped",
            "--leave-resources",
            "--json",
        )
    )
    assert (gone["state"], gone["deleted"]) == ("archived", True)
    log = as_json(lsm("instance", "log", "note", note["id"], "--json"))
    assert [line["trigger"] for line in log] == ["create", "expert", "expert", "expert"]
