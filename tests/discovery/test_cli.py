"""``lsm discovered`` and ``lsm adopt``: typer's CliRunner against the example engine, served on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lsm.cli import app
from lsm.discovery import record_discovery
from lsm.testing import running_engine, served_url
from tests.discovery import plant_files, run_file_discovery

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "discovery"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """The example served, with three planted files discovered: ``(url, their ids)``."""
    url_db = f"sqlite:///{tmp_path / 'lsm.db'}"
    with running_engine(EXAMPLE, url_db, lifecycle_dirs=[EXAMPLE], embedded_worker=False) as engine:
        env = engine.core.environments.context(None).env_id
        planted = plant_files(tmp_path / "srv", {"a": "1", "b": "2", "c": "3"}, agent="h1")
        discovery_id, found = run_file_discovery(tmp_path / "srv", agent="h1")
        with engine.core.db.write() as session:
            record_discovery(session, env, discovery_id, "h1", found, now=datetime.now(UTC))
        with served_url(engine) as url:
            yield url, sorted(planted)


def lsm(url: str, *args: str) -> Any:
    return CliRunner().invoke(app, [*args, "--url", url], env={"COLUMNS": "250"})


def test_lsm_discovered_lists_filters_and_shows_one(served: tuple[str, list[str]]) -> None:
    url, ids = served
    listed = lsm(url, "discovered", "--json")
    assert listed.exit_code == 0, listed.output
    assert [row["id"] for row in json.loads(listed.stdout)] == ids
    assert json.loads(lsm(url, "discovered", "--managed", "--json").stdout) == []
    assert len(json.loads(lsm(url, "discovered", "--unmanaged", "--type", "std::File", "--json").stdout)) == 3
    assert json.loads(lsm(url, "discovered", "--agent", "nobody", "--json").stdout) == []
    one = lsm(url, "discovered", ids[0], "--json")
    assert json.loads(one.stdout)["id"] == ids[0]
    table = lsm(url, "discovered")  # not a terminal: one discovered resource per line, nothing else
    assert table.exit_code == 0 and [line.split("\t")[0] for line in table.stdout.splitlines()] == ids


def test_lsm_adopt_creates_instances_and_a_second_adopt_is_refused(served: tuple[str, list[str]]) -> None:
    url, ids = served
    adopted = lsm(url, "adopt", "managed_file", ids[0], ids[1], "--json")
    assert adopted.exit_code == 0, adopted.output
    assert [i["state"] for i in json.loads(adopted.stdout)] == ["creating", "creating"]
    again = lsm(url, "adopt", "managed_file", ids[1])
    assert again.exit_code == 1
    assert "already adopted" in again.output and ids[1] in again.output.replace("\n", "")
