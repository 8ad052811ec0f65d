"""``lsm compliance`` and the selection options of ``lsm deploy`` (typer's CliRunner) against a
served engine whose own loop deploys and checks real files, on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from lsm.cli import app
from lsm.runtime.wiring import ApiRuntime
from lsm.testing import served_url
from tests.api.test_compliance import engine, rid, state_dir
from tests.waiting import wait_until

__all__ = ["engine", "state_dir"]


@pytest.fixture
def lsm(engine: ApiRuntime) -> Iterator[Callable[..., Result]]:
    runner = CliRunner()
    with served_url(engine) as url:

        def run(*args: str) -> Result:
            return runner.invoke(app, [*args, "--url", url], env={"COLUMNS": "250"})

        yield run


def test_compliance_prints_what_is_not_in_sync_and_exits_1(
    lsm: Callable[..., Result], state_dir: Path
) -> None:
    (state_dir / "s1/a.conf").write_text("edited")
    (state_dir / "s2/a.conf").unlink()

    table = lsm("compliance")
    narrowed = lsm("compliance", "--agent", "b", "--all")
    as_json = lsm("compliance", "--set", "s1", "-o", "json")

    assert table.exit_code == 1, table.output
    assert "drifted" in table.output and "missing" in table.output and "edited" in table.output
    assert rid("s1/b.conf", "b") not in table.output  # in sync: left out without --all
    assert "4 of 4 resource(s) checked: drifted 1, in_sync 2, missing 1" in table.output
    assert narrowed.exit_code == 0, narrowed.output
    assert rid("s1/b.conf", "b") in narrowed.output and "in_sync 2" in narrowed.output
    report = json.loads(as_json.output)
    assert as_json.exit_code == 1 and report["status"] == "done"
    assert {r["id"]: r["outcome"] for r in report["resources"]} == {
        rid("s1/a.conf"): "drifted",
        rid("s1/b.conf", "b"): "in_sync",
    }
    assert (state_dir / "s1/a.conf").read_text() == "edited"  # nothing repaired


def test_compliance_refuses_a_bad_selection_naming_the_field(lsm: Callable[..., Result]) -> None:
    result = lsm("compliance", "--instance", "not-an-id")
    assert result.exit_code != 0 and "instances" in result.output


def test_deploy_repair_of_one_set(lsm: Callable[..., Result], state_dir: Path) -> None:
    for path in ("s1/a.conf", "s2/a.conf"):
        (state_dir / path).write_text("edited")

    result = lsm("deploy", "--repair", "--set", "s2", "--type", "test::File", "--wait")

    assert result.exit_code == 0, result.output
    assert "2 resource(s) scheduled" in result.output
    wait_until(lambda: (state_dir / "s2/a.conf").read_text() == "three", "s2/a.conf repaired")
    assert (state_dir / "s1/a.conf").read_text() == "edited"
